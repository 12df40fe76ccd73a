// What the ordered_consumer blocks use and do not define: the brokers, the application's
// processing, its stop flag, and its own durable output (for the exactly-once store).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

extern const char* brokers;
extern bool running;
void handle_event(std::string_view key, std::string_view value);
// The application's output, committed in one transaction with a blob (a database, say).
void output_append(std::string_view key, std::string_view value);
void output_commit_with(const std::string& blob);
auto output_rollback_and_last_blob() -> std::string;  // empty before the first commit
// The ordered_group blocks: the expensive, order-insensitive step, and an output per home
// partition that can be flushed (returning its durable length) and cut back to a length.
auto enrich(std::string_view value) -> std::string;
auto output_flush(std::int32_t home) -> std::uint64_t;
void output_truncate(std::int32_t home, std::uint64_t length);
