#pragma once

/// @file
/// Ordering stamps: what the salting router attaches to every event whose order a consumer could
/// lose, and their compact, versioned wire form for a message header.
///
/// A stamp names an *episode*: the stretch during which one producer lane (one routing thread at
/// a time of one router) tracks one key as hot or about to be hot. Within an episode, `sequence`
/// counts that lane's events of that key from 0 without gaps, in the order the lane routed them.
/// Episodes of the same key never overlap within a lane, and a lane's episode ids only grow.
///
/// Wire format, version 1 (all integers unsigned LEB128 varints):
///
///     byte 0     : 0x01                      version
///     byte 1     : flags                     bit 0: `salted` (the event went off its home
///                                            partition or may have); other bits must be 0
///     varint     : producer                  the router instance id
///     varint     : lane                      the lane within the router (< 2^16)
///     varint     : episode                   >= 1
///     varint     : sequence
///
/// The encoder writes at most 2 + 10 + 3 + 10 + 10 = 35 bytes, typically 14 to 18 with the
/// salting router's random producer id (9 or 10 bytes), 13 to 17 with a one-byte id given in
/// its config (whose episode ids then start at a random point, 7 or 8 bytes). The decoder
/// also accepts varints padded to their 10 bytes (not the shortest form, but within 64 bits), so
/// it reads up to 42. The header name keyroute uses
/// is keyroute::stamp_header_name. The format is a compatibility contract: a version-1 decoder
/// accepts what any version-1 encoder wrote, forever.

#include "detail/config.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace keyroute {

/// The message header name under which adapters carry an encoded stamp.
inline constexpr std::string_view stamp_header_name = "keyroute-stamp";

/// One event's ordering stamp. A default-constructed stamp (episode 0) means "no stamp".
struct stamp {
    std::uint64_t producer = 0;  ///< router instance id (salting_config::producer_id)
    std::uint16_t lane = 0;      ///< producer lane (one routing thread at a time) within the router
    std::uint64_t episode = 0;   ///< >= 1 for a real stamp; unique per (producer, lane)
    /// 0, 1, 2, ... within the episode, without gaps; 2^64-1 would be the episode's last (the
    /// resequencer then treats the episode as finished). The salting router writes at most
    /// 2^32 - 2 in an episode (71 minutes of a million events a second of one key on one lane):
    /// that event goes home and ends the episode, and the lane's next spread event opens a new
    /// one (a sequence never wraps to 0, which a resequencer would take for a duplicate).
    std::uint64_t sequence = 0;
    bool salted = false;  ///< the key was being spread when this event was routed

    /// True for a real stamp, false for "no stamp".
    [[nodiscard]] constexpr explicit operator bool() const noexcept { return episode != 0; }

    friend constexpr auto operator==(const stamp& a, const stamp& b) noexcept -> bool {
        return a.producer == b.producer && a.lane == b.lane && a.episode == b.episode &&
               a.sequence == b.sequence && a.salted == b.salted;
    }
    friend constexpr auto operator!=(const stamp& a, const stamp& b) noexcept -> bool {
        return !(a == b);
    }
};

/// The largest encoded size of a version-1 stamp.
inline constexpr std::size_t max_encoded_stamp_size = 35;

/// An encoded stamp in a fixed buffer: no allocation on the producer's path.
struct encoded_stamp {
    std::array<unsigned char, max_encoded_stamp_size> bytes{};
    std::size_t size = 0;

    [[nodiscard]] auto data() const noexcept -> const unsigned char* { return bytes.data(); }
    [[nodiscard]] auto view() const noexcept -> std::string_view {
        return {reinterpret_cast<const char*>(bytes.data()), size};
    }
};

namespace detail {

inline void put_varint(encoded_stamp& out, std::uint64_t v) noexcept {
    while (v >= 0x80U) {
        out.bytes[out.size++] = static_cast<unsigned char>(v | 0x80U);
        v >>= 7U;
    }
    out.bytes[out.size++] = static_cast<unsigned char>(v);
}

/// Reads one varint; nullopt on truncation or on more than 64 bits (including overlong
/// 10-byte forms that set bits above 63).
inline auto get_varint(std::string_view in, std::size_t& pos) noexcept
    -> std::optional<std::uint64_t> {
    std::uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (pos >= in.size()) return std::nullopt;
        const auto b = static_cast<unsigned char>(in[pos++]);
        if (shift == 63 && b > 1U) return std::nullopt;
        v |= static_cast<std::uint64_t>(b & 0x7fU) << shift;
        if ((b & 0x80U) == 0) return v;
    }
    return std::nullopt;
}

}  // namespace detail

/// Encodes a real stamp (episode >= 1) in version-1 wire format. O(1), no allocation, noexcept.
/// "No stamp" (episode 0) encodes to no bytes (`size == 0`): there is no header to attach, and
/// nothing a decoder would reject.
[[nodiscard]] inline auto encode_stamp(const stamp& s) noexcept -> encoded_stamp {
    encoded_stamp out;
    if (!s) return out;
    out.bytes[out.size++] = 0x01;
    out.bytes[out.size++] = s.salted ? 0x01 : 0x00;
    detail::put_varint(out, s.producer);
    detail::put_varint(out, s.lane);
    detail::put_varint(out, s.episode);
    detail::put_varint(out, s.sequence);
    return out;
}

/// Why a byte string is not a valid stamp.
enum class stamp_error {
    none,
    empty,            ///< no bytes at all
    unknown_version,  ///< first byte is not a version this decoder knows
    bad_flags,        ///< reserved flag bits set
    truncated,        ///< a field is cut short or a varint is longer than 64 bits
    bad_lane,         ///< lane does not fit 16 bits
    zero_episode,     ///< episode 0 is reserved for "no stamp"
    trailing_bytes,   ///< bytes after the last field
};

/// A readable name for a stamp_error.
[[nodiscard]] constexpr auto to_string(stamp_error e) noexcept -> const char* {
    switch (e) {
    case stamp_error::none: return "no error";
    case stamp_error::empty: return "empty stamp";
    case stamp_error::unknown_version: return "unknown stamp version";
    case stamp_error::bad_flags: return "reserved stamp flag bits set";
    case stamp_error::truncated: return "truncated stamp field";
    case stamp_error::bad_lane: return "stamp lane above 65535";
    case stamp_error::zero_episode: return "stamp episode 0";
    case stamp_error::trailing_bytes: return "trailing bytes after stamp";
    }
    return "unknown stamp error";
}

/// Decodes `bytes`; never throws, never reads past the input. On failure returns nullopt and
/// sets `error` (if given) to the reason.
[[nodiscard]] inline auto try_decode_stamp(std::string_view bytes,
                                           stamp_error* error = nullptr) noexcept
    -> std::optional<stamp> {
    const auto fail = [&](stamp_error e) -> std::optional<stamp> {
        if (error != nullptr) *error = e;
        return std::nullopt;
    };
    if (bytes.empty()) return fail(stamp_error::empty);
    if (static_cast<unsigned char>(bytes[0]) != 0x01) return fail(stamp_error::unknown_version);
    if (bytes.size() < 2) return fail(stamp_error::truncated);
    const auto flags = static_cast<unsigned char>(bytes[1]);
    if ((flags & ~0x01U) != 0) return fail(stamp_error::bad_flags);
    std::size_t pos = 2;
    stamp s;
    s.salted = (flags & 0x01U) != 0;
    const auto producer = detail::get_varint(bytes, pos);
    if (!producer) return fail(stamp_error::truncated);
    const auto lane = detail::get_varint(bytes, pos);
    if (!lane) return fail(stamp_error::truncated);
    if (*lane > 0xffffU) return fail(stamp_error::bad_lane);
    const auto episode = detail::get_varint(bytes, pos);
    if (!episode) return fail(stamp_error::truncated);
    if (*episode == 0) return fail(stamp_error::zero_episode);
    const auto sequence = detail::get_varint(bytes, pos);
    if (!sequence) return fail(stamp_error::truncated);
    if (pos != bytes.size()) return fail(stamp_error::trailing_bytes);
    s.producer = *producer;
    s.lane = static_cast<std::uint16_t>(*lane);
    s.episode = *episode;
    s.sequence = *sequence;
    if (error != nullptr) *error = stamp_error::none;
    return s;
}

/// Decodes `bytes`.
/// @throws std::runtime_error naming the reason (see stamp_error) for malformed input.
[[nodiscard]] inline auto decode_stamp(std::string_view bytes) -> stamp {
    stamp_error e = stamp_error::none;
    auto s = try_decode_stamp(bytes, &e);
    if (!s) detail::runtime_error(std::string("keyroute: cannot decode stamp: ") + to_string(e));
    return *s;
}

}  // namespace keyroute
