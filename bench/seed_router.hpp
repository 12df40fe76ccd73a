#pragma once
// A literal C++ port of the router in ../shared/seeds/dynamic-key-partitioning.txt, kept as the
// baseline the benchmarks and the simulator compare against, flaws included: an unbounded
// per-(key, minute) dictionary that is never evicted, md5 per event, a fixed fan-out of 3, and
// salt keys built as "<id>_sub_<n>" strings.
//
//     current_minute = int(time.time() // 60)
//     tracking_key = f'{client_id}_{current_minute}'
//     count = self.tracker.get(tracking_key, 0) + 1; self.tracker[tracking_key] = count
//     effective_key = f'{client_id}_sub_{count % 3}' if count > threshold else client_id
//     return int(md5(effective_key).hexdigest(), 16) % partition_count
#include <openssl/md5.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace keyroute_bench {

class seed_router {
public:
    seed_router(std::uint32_t partition_count, std::uint64_t threshold)
        : m_partitions(partition_count),
          m_threshold(threshold) {}

    /// The seed's get_dynamic_partition, with the event time given in seconds since the epoch.
    auto route(std::string_view client_id, std::int64_t unix_seconds) -> std::uint32_t {
        bool salted = false;
        return route(client_id, unix_seconds, salted);
    }

    /// The same, telling whether the event was salted (its key past the threshold).
    auto route(std::string_view client_id, std::int64_t unix_seconds, bool& salted)
        -> std::uint32_t {
        const std::int64_t minute =
            unix_seconds >= 0 ? unix_seconds / 60 : -((-unix_seconds + 59) / 60);
        std::string tracking_key(client_id);
        tracking_key += '_';
        tracking_key += std::to_string(minute);
        const std::uint64_t count = ++m_tracker[tracking_key];
        salted = count > m_threshold;
        if (salted) {
            std::string effective(client_id);
            effective += "_sub_";
            effective += std::to_string(count % 3);
            return md5_mod(effective);
        }
        return md5_mod(client_id);
    }

    /// Where the seed sends `client_id` while it is under the threshold: md5(key) % n.
    [[nodiscard]] auto home(std::string_view client_id) const -> std::uint32_t {
        return md5_mod(client_id);
    }

    /// Entries in the tracker dictionary: it only grows.
    [[nodiscard]] auto tracker_size() const noexcept -> std::size_t { return m_tracker.size(); }

private:
    // int(md5(key).hexdigest(), 16) % n: the digest read as a 128-bit big-endian number.
    [[nodiscard]] auto md5_mod(std::string_view key) const -> std::uint32_t {
        unsigned char digest[MD5_DIGEST_LENGTH];
        // MD5() is deprecated in OpenSSL 3 but is exactly what the seed calls; benchmark only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        MD5(reinterpret_cast<const unsigned char*>(key.data()), key.size(), digest);
#pragma GCC diagnostic pop
        std::uint64_t rem = 0;
        for (unsigned char byte : digest) rem = (rem * 256 + byte) % m_partitions;
        return static_cast<std::uint32_t>(rem);
    }

    std::uint32_t m_partitions;
    std::uint64_t m_threshold;
    std::unordered_map<std::string, std::uint64_t> m_tracker;
};

}  // namespace keyroute_bench
