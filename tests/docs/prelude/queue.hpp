// What the in-house queue blocks use and do not define: a queue of partitioned logs read by
// one consumer thread, and the application's processing, stop flag and clock.
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct queued {
    std::uint32_t partition;
    std::int64_t offset;
    std::string key;
    std::string stamp_header;  // the keyroute-stamp bytes the producer attached, or empty
    std::string value;
};
extern const std::uint32_t partitions;
extern bool running;
auto next_message() -> std::optional<queued>;  // each partition's messages in partition order
auto every_partition_started() -> bool;        // each one gave a message or reached its end
auto commit_due() -> bool;                     // every second, say
void commit(std::uint32_t partition, std::int64_t offset);
void process(std::string_view key, const std::string& value);
template <class GapReport>
void report_missing(const GapReport& gap);
auto now_ms() -> std::chrono::milliseconds;  // system_clock, in milliseconds
