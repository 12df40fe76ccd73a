#pragma once

/// @file
/// What the members of a keyroute::kafka::ordered_group write to Kafka besides the events, and
/// its byte encodings (text, one field per token, checked on decode so that a foreign or
/// truncated record is an error, never a wrong restore):
/// - the origin header of a forwarded event: the source partition and offset it was read at
///   (and its timestamp there, which the forward does not keep),
///   by which the home's resequencer orders it (rule 2 runs per source partition) and knows a
///   re-forward after a crash for what it is;
/// - a progress record: how far a member has forwarded its source partitions, written to every
///   repartition partition, so that a home's watermark clock holds while a source that can
///   still forward to it is behind (the watermark of a shuffle, as Flink's is the least of its
///   input channels');
/// - a home checkpoint: a home partition's resequencer state with the offsets to resume its
///   source and repartition partitions from and the application's own state, as one changelog
///   record, so that the home moves to another member with all it needs.

#include "checkpoint.hpp"

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace keyroute::kafka {

/// Header names of the group's records (the stamp travels under keyroute::stamp_header_name).
inline constexpr std::string_view origin_header_name = "keyroute-origin";
inline constexpr std::string_view progress_header_name = "keyroute-progress";

/// Where a forwarded event was read in the source topic, and its timestamp there.
struct source_position {
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    std::int64_t timestamp = -1;  ///< ms since the epoch, -1 for none

    friend auto operator==(const source_position& a, const source_position& b) noexcept -> bool {
        return a.partition == b.partition && a.offset == b.offset && a.timestamp == b.timestamp;
    }
};

/// Where a source partition's reader stands.
enum class source_state : int {
    reading = 0,  ///< has more to read, or is reading it
    at_end = 1,   ///< read to the partition's end as of its last fetch
    blocked = 2,  ///< held back by a refusal at its own home: it forwards nothing until that
                  ///< home takes the refused event
};

/// One source partition's forwarding progress: every event read below `next` has been
/// forwarded (or pushed at home). `watermark` (ms since the epoch, -1 for none) bounds what it
/// can still forward: every event it read with a timestamp up to it is forwarded; at its end,
/// the writer's clock when it wrote the record. `state` is for monitoring.
struct source_progress {
    std::int32_t partition = 0;
    std::int64_t next = -1;
    source_state state = source_state::reading;
    std::int64_t watermark = -1;

    friend auto operator==(const source_progress& a, const source_progress& b) noexcept -> bool {
        return a.partition == b.partition && a.next == b.next && a.state == b.state &&
               a.watermark == b.watermark;
    }
};

/// What a home knows of one source partition from the progress records it has read. Records
/// of a source can come from its successive owners in any order (an earlier owner's producer
/// may still flush after the partition moved), so a record counts by the position it states,
/// not by when it arrived: the furthest `next` wins, and one behind it is an older statement
/// that adds nothing (everything below the furthest `next` was forwarded before that record).
/// At an equal `next` both statements hold, so the watermark is the greater.
struct progress_known {
    bool heard = false;
    std::int64_t next = -1;
    source_state state = source_state::reading;
    std::int64_t watermark = -1;

    /// Takes `r` into what is known; false when `r` was behind it and changed nothing.
    auto take(const source_progress& r) noexcept -> bool {
        if (heard && r.next < next) return false;
        watermark = heard && r.next == next && watermark > r.watermark ? watermark : r.watermark;
        heard = true;
        next = r.next;
        state = r.state;
        return true;
    }
};

/// What a home partition's new owner needs to go on where the last one committed.
struct home_checkpoint {
    std::int32_t home = 0;
    std::int64_t source_offset = -1;       ///< the source partition's next offset to read
    std::int64_t repartition_offset = -1;  ///< the repartition partition's next offset to read
    std::string application;               ///< what the application's save_state returned
    consumer_checkpoint state;             ///< the home's resequencer (topic, count, state)
};

namespace detail {

inline constexpr std::string_view progress_magic = "keyroute-progress-2";
inline constexpr std::string_view home_magic = "keyroute-home-checkpoint-1";

[[noreturn]] inline void bad_record(const char* what, std::string_view field) {
    keyroute::detail::runtime_error(std::string("keyroute::kafka::") + what +
                                    ": malformed or truncated field " + std::string(field));
}

/// Runs `read` on a checkpoint_reader over `bytes`, rewording its error for `what`.
template <class Read>
auto read_record(const char* what, std::string_view bytes, Read read) {
#if KEYROUTE_HAS_EXCEPTIONS
    try {
        checkpoint_reader in(bytes);
        return read(in);
    } catch (const std::runtime_error& e) {
        const std::string_view m = e.what();
        const auto at = m.rfind("field ");
        bad_record(what, at == std::string_view::npos ? m : m.substr(at + 6));
    }
#else
    static_cast<void>(what);  // a malformed record aborts, in checkpoint_reader::fail
    checkpoint_reader in(bytes);
    return read(in);
#endif
}

}  // namespace detail

[[nodiscard]] inline auto encode_origin(const source_position& p) -> std::string {
    return std::to_string(p.partition) + ' ' + std::to_string(p.offset) + ' ' +
           std::to_string(p.timestamp);
}

/// @throws std::runtime_error when `bytes` are not an encode_origin() output with a
///         partition and an offset >= 0 and a timestamp >= -1.
[[nodiscard]] inline auto decode_origin(std::string_view bytes) -> source_position {
    return detail::read_record("decode_origin", bytes, [&](detail::checkpoint_reader& in) {
        source_position p;
        p.partition = in.number<std::int32_t>("partition");
        p.offset = in.number<std::int64_t>("offset");
        p.timestamp = in.number<std::int64_t>("timestamp");
        if (p.partition < 0) detail::bad_record("decode_origin", "partition");
        if (p.offset < 0) detail::bad_record("decode_origin", "offset");
        if (p.timestamp < -1) detail::bad_record("decode_origin", "timestamp");
        if (!in.done()) detail::bad_record("decode_origin", "end");
        return p;
    });
}

[[nodiscard]] inline auto encode_progress(const std::vector<source_progress>& list) -> std::string {
    std::ostringstream out;
    out << detail::progress_magic << ' ' << list.size();
    for (const auto& s : list) {
        out << ' ' << s.partition << ' ' << s.next << ' ' << static_cast<int>(s.state) << ' '
            << s.watermark;
    }
    out << " end";
    return out.str();
}

/// @throws std::runtime_error when `bytes` are not an encode_progress() output.
[[nodiscard]] inline auto decode_progress(std::string_view bytes) -> std::vector<source_progress> {
    return detail::read_record("decode_progress", bytes, [&](detail::checkpoint_reader& in) {
        if (in.word("magic") != detail::progress_magic)
            detail::bad_record("decode_progress", "magic");
        std::vector<source_progress> list(in.count("count", 8));  // 4 numbers each
        for (auto& s : list) {
            s.partition = in.number<std::int32_t>("partition");
            s.next = in.number<std::int64_t>("next");
            const auto state = in.number<int>("state");
            s.watermark = in.number<std::int64_t>("watermark");
            if (s.partition < 0 || s.next < -1) detail::bad_record("decode_progress", "partition");
            if (state < 0 || state > 2) detail::bad_record("decode_progress", "state");
            if (s.watermark < -1) detail::bad_record("decode_progress", "watermark");
            s.state = static_cast<source_state>(state);
        }
        if (in.word("end") != "end" || !in.done()) detail::bad_record("decode_progress", "end");
        return list;
    });
}

[[nodiscard]] inline auto encode_home_checkpoint(const home_checkpoint& cp) -> std::string {
    std::ostringstream out;
    out << detail::home_magic << ' ' << cp.home << ' ' << cp.source_offset << ' '
        << cp.repartition_offset;
    detail::put_hex(out, cp.application);
    out << '\n' << encode_checkpoint(cp.state);
    return out.str();
}

/// @throws std::runtime_error naming the field when `bytes` are not such an encoding.
[[nodiscard]] inline auto decode_home_checkpoint(std::string_view bytes) -> home_checkpoint {
    const auto nl = bytes.find('\n');
    home_checkpoint cp = detail::read_record(
        "decode_home_checkpoint", bytes.substr(0, nl), [&](detail::checkpoint_reader& in) {
            if (in.word("magic") != detail::home_magic) {
                detail::bad_record("decode_home_checkpoint", "magic");
            }
            home_checkpoint h;
            h.home = in.number<std::int32_t>("home");
            h.source_offset = in.number<std::int64_t>("source_offset");
            h.repartition_offset = in.number<std::int64_t>("repartition_offset");
            h.application = in.hex("application");
            if (h.home < 0) detail::bad_record("decode_home_checkpoint", "home");
            if (h.source_offset < -1 || h.repartition_offset < -1) {
                detail::bad_record("decode_home_checkpoint", "offset");
            }
            if (!in.done()) detail::bad_record("decode_home_checkpoint", "application");
            return h;
        });
    if (nl == std::string_view::npos) detail::bad_record("decode_home_checkpoint", "state");
    cp.state = decode_checkpoint(bytes.substr(nl + 1));
    return cp;
}

}  // namespace keyroute::kafka
