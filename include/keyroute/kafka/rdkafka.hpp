#pragma once

/// @file
/// The librdkafka adapter: route before produce, plug keyroute partitioners into librdkafka's
/// partitioner callbacks, and read ordering stamps back on consume.
///
/// Optional: include it only where librdkafka (C and C++ API) is installed, and link the
/// `keyroute::rdkafka` CMake target. The core headers never include librdkafka.
///
/// Two ways to choose a partition with librdkafka:
///
/// 1. Route first, then produce to an explicit partition (keyroute::kafka::produce). This is the
///    only correct path for keyroute::salting_router and anything else whose `decide()` has side
///    effects: librdkafka may call a partitioner callback more than once per message (again after
///    a metadata refresh, for messages queued before the topic was known) and from any of its
///    threads, so a callback that counts load or numbers stamps would miscount, and its stamp
///    could not reach the message's headers anyway.
/// 2. Let librdkafka call a *static* keyroute partitioner (partitioner_cb,
///    stateless_partitioner_cb, cpp_partitioner_cb, cpp_key_pointer_partitioner_cb). Static
///    partitioners are pure functions of (key, partition count), so repeated calls from any thread
///    are harmless.

#include "../detail/config.hpp"
#include "../partitioner.hpp"  // kafka_partitioner and the other clients' schemes
#include "../stamp.hpp"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace keyroute::kafka {

/// One extra message header for keyroute::kafka::produce.
struct header {
    const char* name = nullptr;  ///< NUL-terminated header name; must not be null
    std::string_view value;      ///< the bytes, copied; a default (null) view is a null value
};

/// A non-owning view of extra headers: an initializer list, a contiguous container of `header`
/// (std::vector, std::array) or a pointer and a count. It refers to the caller's headers, which
/// must outlive the produce call (a braced list written in the call's argument list does).
class header_list {
public:
    constexpr header_list() noexcept = default;
    constexpr header_list(const header* first, std::size_t count) noexcept
        : m_first(first),
          m_count(count) {}
    // A braced list lives until the end of the full expression: fine as a call argument only.
    constexpr header_list(std::initializer_list<header> list) noexcept
        : m_first(std::data(list)),
          m_count(list.size()) {}
    template <class Container,
              class = std::enable_if_t<std::is_convertible_v<
                  decltype(std::declval<const Container&>().data()), const header*>>>
    constexpr header_list(const Container& c) noexcept  // NOLINT: implicit by design
        : m_first(c.data()),
          m_count(c.size()) {}

    [[nodiscard]] constexpr auto begin() const noexcept -> const header* { return m_first; }
    [[nodiscard]] constexpr auto end() const noexcept -> const header* { return m_first + m_count; }
    [[nodiscard]] constexpr auto size() const noexcept -> std::size_t { return m_count; }
    [[nodiscard]] constexpr auto empty() const noexcept -> bool { return m_count == 0; }

private:
    const header* m_first = nullptr;
    std::size_t m_count = 0;
};

/// What keyroute::kafka::produce did. On failure the routing decision has already been made (and,
/// for a salting router, counted and stamped), unless the arguments were refused before routing
/// (RD_KAFKA_RESP_ERR__INVALID_ARG, partition RD_KAFKA_PARTITION_UA): retry with
/// produce_to(partition, stamp, ...), do not route the same event again, or the stamp sequence
/// gets a gap and a duplicate. A stamped event that is never sent (an error no retry cures,
/// such as a message over message.max.bytes) leaves a gap: a consumer holds the key's later
/// events of that episode for max_delay, then reports the gap and goes on.
struct produce_result {
    /// RD_KAFKA_RESP_ERR_NO_ERROR when librdkafka queued the message; otherwise the error
    /// rd_kafka_produceva returned (e.g. RD_KAFKA_RESP_ERR__QUEUE_FULL: poll, then retry).
    rd_kafka_resp_err_t error = RD_KAFKA_RESP_ERR_NO_ERROR;
    std::int32_t partition = RD_KAFKA_PARTITION_UA;  ///< the partition the message was sent to
    keyroute::stamp stamp{};  ///< the stamp written in the header; a false stamp means none

    /// True when the message was queued.
    [[nodiscard]] explicit operator bool() const noexcept {
        return error == RD_KAFKA_RESP_ERR_NO_ERROR;
    }
};

namespace detail {

template <class Router, class = void>
struct has_decide : std::false_type {};
template <class Router>
struct has_decide<
    Router, std::void_t<decltype(std::declval<Router&>().decide(std::declval<std::string_view>()))>>
    : std::true_type {};

template <class Router, class = void>
struct has_route : std::false_type {};
template <class Router>
struct has_route<Router, std::void_t<decltype(std::declval<const Router&>().route(
                             std::declval<std::string_view>()))>> : std::true_type {};

template <class Partitioner>
constexpr auto check_static_partitioner() -> bool {
    static_assert(std::is_constructible_v<Partitioner, std::uint64_t>,
                  "keyroute::kafka: the partitioner must be constructible from a partition count "
                  "(explicit P(std::uint64_t partitions))");
    static_assert(has_route<Partitioner>::value,
                  "keyroute::kafka: the partitioner needs `route(std::string_view) const`");
    static_assert(noexcept(std::declval<const Partitioner&>().route(std::string_view{})),
                  "keyroute::kafka: librdkafka calls partitioners from C code, so "
                  "`route(std::string_view) const` must be noexcept");
    return true;
}

/// A key pointer from librdkafka as a view; non-NULL even for the empty key.
inline auto key_view(const void* key, std::size_t len) noexcept -> std::string_view {
    return {static_cast<const char*>(key), len};
}

/// Whether `Op<P>` is well-formed: what a partitioner offers, for the callbacks below.
template <class P, template <class> class Op, class = void>
struct detects : std::false_type {};
template <class P, template <class> class Op>
struct detects<P, Op, std::void_t<Op<P>>> : std::true_type {};

template <class P>
using table_size_of = decltype(std::declval<const P&>().table_size());  // maglev_partitioner
template <class P>
using key_groups_of = decltype(std::declval<const P&>().max_key_groups());  // key_group_partitioner
template <class P>
using hash_function_of = decltype(std::declval<const P&>().hash_function());
template <class P>
using ids_of = decltype(std::declval<const P&>().ids());  // maglev, rendezvous
template <class P>
using weighted_of = decltype(std::declval<const P&>().weighted());  // rendezvous_partitioner
template <class P>
using max_partitions_of = decltype(P::max_partitions);

template <class P>
inline constexpr bool has_table_size = detects<P, table_size_of>::value;
template <class P>
inline constexpr bool has_key_groups = detects<P, key_groups_of>::value;
template <class P>
inline constexpr bool has_hash_function = detects<P, hash_function_of>::value;
template <class P>
inline constexpr bool has_ids = detects<P, ids_of>::value;
template <class P>
inline constexpr bool has_weighted = detects<P, weighted_of>::value;
template <class P>
inline constexpr bool has_max_partitions = detects<P, max_partitions_of>::value;

/// Whether `own` is defined by its partition count and settings alone (ids 0..n-1, equal
/// weights), so that the same scheme at another count exists. A partitioner over an id set of
/// the user's choosing, or weighted, has no counterpart at another count.
template <class P>
auto follows_count(const P& own) noexcept -> bool {
    if constexpr (has_weighted<P>) {
        if (own.weighted()) return false;
    }
    if constexpr (has_ids<P>) {
        std::uint32_t expected = 0;
        for (const auto id : own.ids()) {
            if (id != expected++) return false;
        }
    }
    return true;
}

/// Whether `P` accepts `n` partitions with `own`'s settings, checked before building one so that
/// builds without exceptions do not abort on a count the scheme rejects.
template <class P>
auto accepts_count(const P& own, std::uint32_t n) noexcept -> bool {
    if constexpr (has_max_partitions<P>) {
        if (n > P::max_partitions) return false;
    }
    if constexpr (has_table_size<P>) {
        if (n > own.table_size()) return false;
    }
    if constexpr (has_key_groups<P>) {
        if (n > own.max_key_groups()) return false;
    }
    static_cast<void>(own);
    return n > 0;
}

/// `own`'s scheme at `n` partitions, with `own`'s settings: its hash functor (a seed), maglev's
/// table size, the number of key groups. A partitioner of the user's own is built as `P(n)`,
/// or `P(n, own.hash_function())` when it has both.
/// @throws what the constructor throws (a rejected count; std::bad_alloc).
template <class P>
auto rebuilt_for(const P& own, std::uint32_t n) -> P {
    if constexpr (has_table_size<P> && has_hash_function<P>) {
        return P(n, own.table_size(), own.hash_function());
    } else if constexpr (has_key_groups<P> && has_hash_function<P>) {
        return P(n, own.max_key_groups(), own.hash_function());
    } else if constexpr (has_hash_function<P>) {
        if constexpr (std::is_constructible_v<P, std::uint64_t, decltype(own.hash_function())>) {
            return P(n, own.hash_function());
        } else {
            return P(n);
        }
    } else {
        static_cast<void>(own);
        return P(n);
    }
}

/// What the partitioner callbacks share: the configured partitioner, answering for its own
/// count, and the same scheme (same settings) at the counts librdkafka passes when the topic's
/// count differs (it grew), built once per count and kept: a maglev table or a rendezvous id
/// list is not rebuilt per message. Lookups are lock-free (acquire loads); a build allocates,
/// once per count, on the first call at that count; up to `cached_counts` counts are kept, and
/// any further count is built, on the heap, for each call at it (one allocation per message).
///
/// A partitioner over a chosen id set, or weighted, has no counterpart at another count: it
/// answers as configured when its answer is below the count. Where there is no answer (such an
/// id past the count, or a count the scheme refuses) the callback returns `partition_cnt`
/// itself, out of range, so librdkafka fails the message at once with
/// RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION. (RD_KAFKA_PARTITION_UA would leave it in librdkafka's
/// unassigned queue for good: no error, no delivery report, flush() waiting out its timeout.)
template <class Partitioner>
class count_router {
public:
    static constexpr std::size_t cached_counts = 4;

    explicit count_router(Partitioner own)
        : m_own(std::move(own)),
          m_follows_count(follows_count(m_own)) {}
    count_router(const count_router&) = delete;
    auto operator=(const count_router&) -> count_router& = delete;
    ~count_router() {
        for (auto& slot : m_cache) delete slot.load(std::memory_order_relaxed);
    }

    [[nodiscard]] auto own() const noexcept -> const Partitioner& { return m_own; }

    /// The partition of `key` among `partition_cnt`; `partition_cnt` itself (out of range)
    /// when the scheme has no answer there; RD_KAFKA_PARTITION_UA when `partition_cnt` <= 0.
    auto route(std::string_view key, std::int32_t partition_cnt) const noexcept -> std::int32_t {
        if (partition_cnt <= 0) return RD_KAFKA_PARTITION_UA;
        const auto n = static_cast<std::uint32_t>(partition_cnt);
        if (!m_follows_count) {  // at its own count too: its ids need not be below it
            const std::uint32_t p = m_own.route(key);
            return p < n ? static_cast<std::int32_t>(p) : partition_cnt;
        }
        if (n == m_own.partitions()) return static_cast<std::int32_t>(m_own.route(key));
        if (!accepts_count(m_own, n)) return partition_cnt;
        for (const auto& slot : m_cache) {
            const entry* e = slot.load(std::memory_order_acquire);
            if (e == nullptr) break;
            if (e->count == n) return static_cast<std::int32_t>(e->partitioner.route(key));
        }
#if KEYROUTE_HAS_EXCEPTIONS
        try {
            return build(key, n);
        } catch (...) {
            return partition_cnt;  // allocation failed, or a count the scheme rejects
        }
#else
        return build(key, n);
#endif
    }

private:
    struct entry {
        std::uint32_t count;
        Partitioner partitioner;
    };

    auto build(std::string_view key, std::uint32_t n) const -> std::int32_t {
        auto fresh = std::make_unique<entry>(entry{n, rebuilt_for(m_own, n)});
        const auto p = static_cast<std::int32_t>(fresh->partitioner.route(key));
        for (auto& slot : m_cache) {
            const entry* expected = nullptr;
            if (slot.compare_exchange_strong(expected, fresh.get(), std::memory_order_acq_rel)) {
                fresh.release();  // owned by the cache now
                break;
            }
            if (expected->count == n) break;  // another thread cached this count meanwhile
        }
        return p;  // a full cache: built for this call only
    }

    Partitioner m_own;
    bool m_follows_count;
    mutable std::array<std::atomic<const entry*>, cached_counts> m_cache{};
};

inline void set_mem(rd_kafka_vu_t& vu, rd_kafka_vtype_t type, const void* data,
                    std::size_t size) noexcept {
    vu.vtype = type;
    vu.u.mem.ptr = const_cast<void*>(data);  // librdkafka copies (RD_KAFKA_MSG_F_COPY)
    vu.u.mem.size = size;
}

}  // namespace detail

/// The partition count of `topic` from the cluster's metadata: what a router or partitioner for
/// it must be built with, and the partitions a consumer that restores spread keys' order must
/// read. -1 when the metadata does not come within `timeout_ms` or does not know the topic (a
/// topic still being created: ask again). It asks for every topic's metadata: a request for one
/// topic would create it, under a misspelt name, on a cluster that creates topics on demand
/// (a producer's handle asks for that by default).
/// Thread-safety: as rd_kafka_metadata (any thread).
[[nodiscard]] inline auto partition_count(rd_kafka_t* rk, const char* topic,
                                          int timeout_ms) noexcept -> std::int32_t {
    if (rk == nullptr || topic == nullptr) return -1;
    const rd_kafka_metadata_t* md = nullptr;
    std::int32_t n = -1;
    if (rd_kafka_metadata(rk, 1, nullptr, &md, timeout_ms) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        for (int i = 0; i < md->topic_cnt; ++i) {
            const rd_kafka_metadata_topic_t& t = md->topics[i];
            if (t.topic != nullptr && std::strcmp(t.topic, topic) == 0 &&
                t.err == RD_KAFKA_RESP_ERR_NO_ERROR && t.partition_cnt > 0) {
                n = t.partition_cnt;
            }
        }
        rd_kafka_metadata_destroy(md);
    }
    return n;
}

namespace detail {

// What produce_to refuses with RD_KAFKA_RESP_ERR__INVALID_ARG, whatever the partition (a null
// handle, a null or empty topic name: Kafka has no such topic): checked by produce() before it
// routes, so that a refused call uses no stamp (a stamp used and never
// sent is a gap a consumer waits max_delay for, then reports). An extra header named
// keyroute-stamp is refused: it would reach consumers as this event's stamp (a stale one copied
// from a consumed message, or the same one on two events, the second then dropped as a
// duplicate).
[[nodiscard]] inline auto bad_arguments(rd_kafka_t* rk, const char* topic,
                                        header_list extra) noexcept -> bool {
    if (rk == nullptr || topic == nullptr || *topic == '\0') return true;
    for (const auto& h : extra) {
        if (h.name == nullptr || std::string_view(h.name) == stamp_header_name) return true;
    }
    return false;
}

// produce_to() once its arguments are checked (produce() checks them before routing).
[[nodiscard]] inline auto produce_checked(rd_kafka_t* rk, const char* topic, std::int32_t partition,
                                          const keyroute::stamp& s, std::string_view key,
                                          std::string_view value, header_list extra,
                                          void* opaque) noexcept -> rd_kafka_resp_err_t {
    const encoded_stamp bytes = encode_stamp(s);  // no bytes for no stamp
    // The header name must be NUL-terminated; stamp_header_name is a literal, so data() is.
    const char* const stamp_name = stamp_header_name.data();

    // Left uninitialized: each of the first n entries is written before use, and zeroing all
    // seven cost about 70 instructions a message (bench_kafka_produce).
    std::array<rd_kafka_vu_t, 7> vus;
    std::size_t n = 0;
    vus[n].vtype = RD_KAFKA_VTYPE_TOPIC;
    vus[n++].u.cstr = topic;
    vus[n].vtype = RD_KAFKA_VTYPE_PARTITION;
    vus[n++].u.i32 = partition;
    detail::set_mem(vus[n++], RD_KAFKA_VTYPE_KEY, key.data() != nullptr ? key.data() : "",
                    key.size());
    detail::set_mem(vus[n++], RD_KAFKA_VTYPE_VALUE, value.data(), value.size());
    vus[n].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vus[n++].u.i = RD_KAFKA_MSG_F_COPY;
    vus[n].vtype = RD_KAFKA_VTYPE_OPAQUE;
    vus[n++].u.ptr = opaque;

    // Headers always go in a list of ours (V_HEADERS), never as V_HEADER: for V_HEADER,
    // librdkafka 2.0.2's rd_kafka_produceva builds a list it owns and, when the message then
    // fails at once (a partition >= the topic's count, an unknown topic), frees that list twice
    // (heap corruption; found under AddressSanitizer). A V_HEADERS list is only taken over on
    // success, so on failure it is ours to free, once. Nor would V_HEADER be cheaper: librdkafka
    // builds the same list from it (rd_kafka_headers_new, rd_kafka_header_add). A stamped
    // message pays librdkafka three allocations (the list, its array, the header); an unstamped
    // one none beyond librdkafka's own (bench/bench_kafka_produce.cpp measures both).
    rd_kafka_headers_t* list = nullptr;
    if (!extra.empty() || s) {
        list = rd_kafka_headers_new(extra.size() + (s ? 1U : 0U));
        for (const auto& h : extra) {
            const auto err = rd_kafka_header_add(list, h.name, -1, h.value.data(),
                                                 static_cast<ssize_t>(h.value.size()));
            if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
                rd_kafka_headers_destroy(list);
                return err;
            }
        }
        if (s) {
            const auto err = rd_kafka_header_add(list, stamp_name,
                                                 static_cast<ssize_t>(stamp_header_name.size()),
                                                 bytes.data(), static_cast<ssize_t>(bytes.size));
            if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
                rd_kafka_headers_destroy(list);
                return err;
            }
        }
        vus[n].vtype = RD_KAFKA_VTYPE_HEADERS;
        vus[n++].u.headers = list;
    }

    rd_kafka_error_t* error = rd_kafka_produceva(rk, vus.data(), n);
    if (error == nullptr) return RD_KAFKA_RESP_ERR_NO_ERROR;
    const rd_kafka_resp_err_t code = rd_kafka_error_code(error);
    rd_kafka_error_destroy(error);
    if (list != nullptr) rd_kafka_headers_destroy(list);  // not taken over on failure
    return code;
}

}  // namespace detail

/// Produces one message to an explicit `partition` of `topic`, the key as the message key, and,
/// when `s` is a real stamp (`bool(s)`), the header keyroute::stamp_header_name holding
/// `encode_stamp(s)`, after the `extra` headers (so it is the last one of that name).
///
/// Key, value and headers are copied (RD_KAFKA_MSG_F_COPY); `opaque` reaches the delivery report
/// as `rkmessage->_private`. An empty key is sent as an empty (non-null) key; a default
/// (null-data) `value` is sent as a null value.
///
/// @pre `rk` is a producer, `topic` a NUL-terminated name, `partition` < the topic's partition
///      count (else the message fails with RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION).
/// @returns RD_KAFKA_RESP_ERR_NO_ERROR when queued; RD_KAFKA_RESP_ERR__INVALID_ARG for a null
///          `rk`, a null or empty `topic`, a null header name, an extra header named
///          keyroute::stamp_header_name (pass the stamp as `s`; strip the header from headers
///          copied off a consumed message) or a negative partition; otherwise librdkafka's error.
/// Thread-safety: as rd_kafka_produceva (any thread). Allocation: none by keyroute for a message
/// without headers; with a stamp or extra headers, one librdkafka header list (owned by the
/// message once queued; freed here if producing fails).
[[nodiscard]] inline auto produce_to(rd_kafka_t* rk, const char* topic, std::int32_t partition,
                                     const keyroute::stamp& s, std::string_view key,
                                     std::string_view value, header_list extra = {},
                                     void* opaque = nullptr) noexcept -> rd_kafka_resp_err_t {
    if (partition < 0 || detail::bad_arguments(rk, topic, extra)) {
        return RD_KAFKA_RESP_ERR__INVALID_ARG;
    }
    return detail::produce_checked(rk, topic, partition, s, key, value, extra, opaque);
}

namespace detail {

// A router's partition as librdkafka's int32; RD_KAFKA_PARTITION_UA with `error` set for one
// librdkafka cannot name: negative (as produce_to refuses it) or above INT32_MAX (no topic has it).
template <class P>
auto partition_arg(P p, rd_kafka_resp_err_t& error) noexcept -> std::int32_t {
    constexpr auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max());
    if constexpr (std::is_signed_v<P>) {
        if (p < 0) {
            error = RD_KAFKA_RESP_ERR__INVALID_ARG;
            return RD_KAFKA_PARTITION_UA;
        }
    }
    if (static_cast<std::uint64_t>(p) > max) {
        error = RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION;
        return RD_KAFKA_PARTITION_UA;
    }
    return static_cast<std::int32_t>(p);
}

template <class Decision>
auto produce_decision(rd_kafka_t* rk, const char* topic, const Decision& d, std::string_view key,
                      std::string_view value, header_list extra, void* opaque) noexcept
    -> produce_result {
    produce_result r;
    r.partition = partition_arg(d.partition, r.error);
    r.stamp = d.stamp;
    if (r.error != RD_KAFKA_RESP_ERR_NO_ERROR) return r;
    r.error = produce_checked(rk, topic, r.partition, r.stamp, key, value, extra, opaque);
    return r;
}

// What produce() returns for arguments produce_to() would refuse: nothing routed.
inline auto refused_arguments() noexcept -> produce_result {
    produce_result r;
    r.error = RD_KAFKA_RESP_ERR__INVALID_ARG;
    return r;
}

}  // namespace detail

/// Routes `key` with `router` and produces the message to the chosen partition (produce_to).
///
/// `router` is either a router with `decide(key)` returning `{partition, ..., stamp}` (such as
/// keyroute::salting_router; the stamp, when real, is written as the stamp header), or a static
/// partitioner with `route(key) const` (no stamp). `decide()` is called exactly once.
///
/// Arguments produce_to refuses whatever the partition (a null `rk`, `topic` or header name,
/// an extra header named keyroute-stamp) are refused before routing: nothing is counted and no
/// stamp is used (the result's partition is RD_KAFKA_PARTITION_UA).
///
/// @pre The router's partition count equals the topic's (a larger one fails with
///      RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION, as does a partition above INT32_MAX; a smaller
///      one silently leaves partitions unused).
/// @returns the partition, the stamp and librdkafka's error code; on failure see produce_result.
/// Thread-safety: as the router's `decide()`/`route()` and rd_kafka_produceva.
template <class Router>
[[nodiscard]] auto produce(rd_kafka_t* rk, const char* topic, Router& router, std::string_view key,
                           std::string_view value, header_list extra = {}, void* opaque = nullptr)
    -> produce_result {
    if (detail::bad_arguments(rk, topic, extra)) return detail::refused_arguments();
    if constexpr (detail::has_decide<Router>::value) {
        return detail::produce_decision(rk, topic, router.decide(key), key, value, extra, opaque);
    } else {
        static_assert(detail::has_route<Router>::value,
                      "keyroute::kafka::produce: the router needs decide(key) or route(key)");
        produce_result r;
        r.partition = detail::partition_arg(router.route(key), r.error);
        if (r.error != RD_KAFKA_RESP_ERR_NO_ERROR) return r;
        r.error =
            detail::produce_checked(rk, topic, r.partition, r.stamp, key, value, extra, opaque);
        return r;
    }
}

/// Same as produce(), for an event whose time the caller supplies: calls
/// `router.decide(key, now)` (event-time routing, replays, tests). Requires such a `decide`.
template <class Router, class TimePoint>
[[nodiscard]] auto produce_at(rd_kafka_t* rk, const char* topic, Router& router, TimePoint now,
                              std::string_view key, std::string_view value, header_list extra = {},
                              void* opaque = nullptr) -> produce_result {
    if (detail::bad_arguments(rk, topic, extra)) return detail::refused_arguments();
    return detail::produce_decision(rk, topic, router.decide(key, now), key, value, extra, opaque);
}

/// Plugs a static keyroute partitioner into librdkafka's C API, through the topic opaque:
///
///     keyroute::kafka::partitioner_cb<keyroute::kafka_partitioner> cb(16);
///     cb.install(topic_conf);  // sets the partitioner callback and the topic opaque to &cb
///
/// Partition count: librdkafka passes the topic's count with every call. When it equals
/// `partitioner().partitions()` the stored partitioner answers (no allocation, no lock); when it
/// differs (the topic grew), the same scheme with the same settings (hash functor and seed,
/// maglev's table size, key groups) at that count answers, built on the first call at that count
/// and kept (see detail::count_router; lock-free lookups, no allocation after the first call at
/// each of up to four counts; beyond four, one allocation per message at the others).
/// A partitioner over an id set of your choosing, or weighted, has no counterpart at another
/// count: it answers as configured where that is below the count. Where there is no answer the
/// callback returns `partition_cnt` (out of range): librdkafka fails the message at once with
/// RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION.
///
/// NULL keys follow librdkafka's convention: a random available partition
/// (rd_kafka_msg_partitioner_random). librdkafka sends keyless messages to its sticky partitioner
/// and calls the callback for them only when `sticky.partitioning.linger.ms` is 0. A direct
/// call with a NULL key and no topic gets RD_KAFKA_PARTITION_UA (the random choice reads the
/// topic).
/// An empty non-NULL key is hashed like any other key (as librdkafka's murmur2 and fnv1a do).
///
/// @pre The object outlives every topic created from the configured topic conf, and nothing else
///      uses that conf's topic opaque (use stateless_partitioner_cb if something does). It can be
///      neither copied nor moved (the conf holds its address), and `install()` on a temporary
///      does not compile.
/// Thread-safety: librdkafka may call it from any thread.
template <class Partitioner>
class partitioner_cb {
    static_assert(detail::check_static_partitioner<Partitioner>());

public:
    /// @throws std::invalid_argument as `Partitioner(partitions)`.
    explicit partitioner_cb(std::uint64_t partitions) : m_router(Partitioner(partitions)) {}
    explicit partitioner_cb(Partitioner partitioner) : m_router(std::move(partitioner)) {}

    /// Sets this object as `conf`'s partitioner callback and topic opaque.
    void install(rd_kafka_topic_conf_t* conf) const& noexcept {
        rd_kafka_topic_conf_set_partitioner_cb(conf, &callback);
        rd_kafka_topic_conf_set_opaque(conf, const_cast<partitioner_cb*>(this));
    }
    /// A temporary would leave the conf pointing at a destroyed object.
    void install(rd_kafka_topic_conf_t* conf) const&& = delete;

    /// The partition of a (non-NULL) key among `partition_cnt`: `partition_cnt` itself (out of
    /// range) when the scheme has no answer there, RD_KAFKA_PARTITION_UA when it is <= 0.
    [[nodiscard]] auto partition(std::string_view key, std::int32_t partition_cnt) const noexcept
        -> std::int32_t {
        return m_router.route(key, partition_cnt);
    }

    /// The function installed with rd_kafka_topic_conf_set_partitioner_cb; `rkt_opaque` must be
    /// a `partitioner_cb*`.
    static auto callback(const rd_kafka_topic_t* rkt, const void* key, std::size_t keylen,
                         std::int32_t partition_cnt, void* rkt_opaque, void* msg_opaque) noexcept
        -> std::int32_t {
        if (partition_cnt <= 0) return RD_KAFKA_PARTITION_UA;
        if (key == nullptr) {
            if (rkt == nullptr) return RD_KAFKA_PARTITION_UA;  // a direct call: no topic to read
            return rd_kafka_msg_partitioner_random(rkt, key, keylen, partition_cnt, rkt_opaque,
                                                   msg_opaque);
        }
        return static_cast<const partitioner_cb*>(rkt_opaque)
            ->partition(detail::key_view(key, keylen), partition_cnt);
    }

    [[nodiscard]] auto partitioner() const noexcept -> const Partitioner& { return m_router.own(); }

private:
    detail::count_router<Partitioner> m_router;
};

/// A partitioner callback for the C API that needs no object and leaves the topic opaque free:
///
///     rd_kafka_topic_conf_set_partitioner_cb(tconf,
///         &keyroute::kafka::stateless_partitioner_cb<keyroute::kafka_partitioner>);
///
/// Builds `Partitioner(partition_cnt)` on the stack on every call: O(1) and allocation-free for
/// keyroute's hash partitioners (hash_partitioner with a default-constructed hash functor, the
/// Kafka and Pulsar schemes, jump, key groups at their default count). Schemes that build a table
/// or an id list per instance (maglev, rendezvous) do not compile here: use partitioner_cb.
/// NULL keys as partitioner_cb.
template <class Partitioner>
auto stateless_partitioner_cb(const rd_kafka_topic_t* rkt, const void* key, std::size_t keylen,
                              std::int32_t partition_cnt, void* rkt_opaque,
                              void* msg_opaque) noexcept -> std::int32_t {
    static_assert(detail::check_static_partitioner<Partitioner>());
    static_assert(!detail::has_ids<Partitioner>,
                  "keyroute::kafka::stateless_partitioner_cb would build this partitioner's table "
                  "or id list (allocating) on every call: use partitioner_cb");
    if (partition_cnt <= 0) return RD_KAFKA_PARTITION_UA;
    if (key == nullptr) {
        if (rkt == nullptr) return RD_KAFKA_PARTITION_UA;  // a direct call: no topic to read
        return rd_kafka_msg_partitioner_random(rkt, key, keylen, partition_cnt, rkt_opaque,
                                               msg_opaque);
    }
    const auto n = static_cast<std::uint32_t>(partition_cnt);
    // A count the scheme refuses: out of range, so librdkafka fails the message (see
    // detail::count_router).
    if constexpr (detail::has_max_partitions<Partitioner>) {
        if (n > Partitioner::max_partitions) return partition_cnt;
    }
    if constexpr (detail::has_key_groups<Partitioner>) {
        if (n > Partitioner::default_max_key_groups) return partition_cnt;
    }
#if KEYROUTE_HAS_EXCEPTIONS
    try {
        return static_cast<std::int32_t>(Partitioner(n).route(detail::key_view(key, keylen)));
    } catch (...) {
        return partition_cnt;
    }
#else
    return static_cast<std::int32_t>(Partitioner(n).route(detail::key_view(key, keylen)));
#endif
}

/// Plugs a static keyroute partitioner into the C++ API (`RdKafka::PartitionerCb`):
///
///     keyroute::kafka::cpp_partitioner_cb<keyroute::kafka_partitioner> cb(16);
///     topic_conf->set("partitioner_cb", &cb, errstr);
///
/// Partition counts as partitioner_cb. The C++ API hands the key over as a `std::string` (it
/// copies it per call, and a NULL key arrives as an empty one), so every key is hashed; use
/// cpp_key_pointer_partitioner_cb to avoid the copy. The object must outlive the topics.
/// Thread-safety: immutable after construction.
template <class Partitioner>
class cpp_partitioner_cb final : public RdKafka::PartitionerCb {
    static_assert(detail::check_static_partitioner<Partitioner>());

public:
    /// @throws std::invalid_argument as `Partitioner(partitions)`.
    explicit cpp_partitioner_cb(std::uint64_t partitions) : m_router(Partitioner(partitions)) {}
    explicit cpp_partitioner_cb(Partitioner partitioner) : m_router(std::move(partitioner)) {}

    /// The partition of `*key` (empty when null) among `partition_cnt`.
    auto partitioner_cb(const RdKafka::Topic* /*topic*/, const std::string* key,
                        std::int32_t partition_cnt, void* /*msg_opaque*/) noexcept
        -> std::int32_t override {
        const std::string_view k = key != nullptr ? std::string_view(*key) : std::string_view("");
        return m_router.route(k, partition_cnt);
    }

    [[nodiscard]] auto partitioner() const noexcept -> const Partitioner& { return m_router.own(); }

private:
    detail::count_router<Partitioner> m_router;
};

/// The C++ API's key-pointer variant (`RdKafka::PartitionerKeyPointerCb`, no key copy):
///
///     topic_conf->set("partitioner_key_pointer_cb", &cb, errstr);
///
/// Partition counts as partitioner_cb; a NULL key goes to a random available partition
/// (rd_kafka_msg_partitioner_random), librdkafka's convention. The object must outlive the topics.
template <class Partitioner>
class cpp_key_pointer_partitioner_cb final : public RdKafka::PartitionerKeyPointerCb {
    static_assert(detail::check_static_partitioner<Partitioner>());

public:
    /// @throws std::invalid_argument as `Partitioner(partitions)`.
    explicit cpp_key_pointer_partitioner_cb(std::uint64_t partitions)
        : m_router(Partitioner(partitions)) {}
    explicit cpp_key_pointer_partitioner_cb(Partitioner partitioner)
        : m_router(std::move(partitioner)) {}

    /// The partition of the key among `partition_cnt`.
    auto partitioner_cb(const RdKafka::Topic* topic, const void* key, std::size_t key_len,
                        std::int32_t partition_cnt, void* msg_opaque) noexcept
        -> std::int32_t override {
        if (partition_cnt <= 0) return RD_KAFKA_PARTITION_UA;
        if (key == nullptr) {
            // The random partitioner reads the topic: none (a direct call) has no answer.
            if (topic == nullptr) return RD_KAFKA_PARTITION_UA;
            // c_ptr() is non-const only by declaration.
            return rd_kafka_msg_partitioner_random(const_cast<RdKafka::Topic*>(topic)->c_ptr(), key,
                                                   key_len, partition_cnt, nullptr, msg_opaque);
        }
        return m_router.route(detail::key_view(key, key_len), partition_cnt);
    }

    [[nodiscard]] auto partitioner() const noexcept -> const Partitioner& { return m_router.own(); }

private:
    detail::count_router<Partitioner> m_router;
};

/// Reads the stamp a producer wrote with produce()/produce_to() from a consumed message: the
/// last header named keyroute::stamp_header_name, decoded with try_decode_stamp.
///
/// @returns the stamp; or nullopt with `*error` (when given) set to:
///          - stamp_error::none when the message carries no stamp header (an unstamped event,
///            or an error message: check `message->err` first);
///          - the decoder's reason when the header is malformed (a null header value is
///            stamp_error::empty);
///          - stamp_error::truncated when librdkafka cannot parse the message's header block.
/// Never throws; no allocation by keyroute (librdkafka parses the headers once per message).
[[nodiscard]] inline auto try_read_stamp(const rd_kafka_message_t* message,
                                         stamp_error* error = nullptr) noexcept
    -> std::optional<keyroute::stamp> {
    if (error != nullptr) *error = stamp_error::none;
    if (message == nullptr || message->err != RD_KAFKA_RESP_ERR_NO_ERROR) return std::nullopt;
    rd_kafka_headers_t* headers = nullptr;
    const auto err = rd_kafka_message_headers(message, &headers);
    if (err == RD_KAFKA_RESP_ERR__NOENT) return std::nullopt;
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (error != nullptr) *error = stamp_error::truncated;
        return std::nullopt;
    }
    const void* value = nullptr;
    std::size_t size = 0;
    if (rd_kafka_header_get_last(headers, stamp_header_name.data(), &value, &size) !=
        RD_KAFKA_RESP_ERR_NO_ERROR) {
        return std::nullopt;
    }
    return try_decode_stamp(value != nullptr
                                ? std::string_view(static_cast<const char*>(value), size)
                                : std::string_view(),
                            error);
}

/// try_read_stamp for a C++ API message (reads through `message.c_ptr()`, no copy).
[[nodiscard]] inline auto try_read_stamp(RdKafka::Message& message,
                                         stamp_error* error = nullptr) noexcept
    -> std::optional<keyroute::stamp> {
    return try_read_stamp(message.c_ptr(), error);
}

/// Reads the stamp of a consumed message: nullopt when it carries none.
/// @throws std::runtime_error naming the reason (see stamp_error) when the header is malformed.
[[nodiscard]] inline auto read_stamp(const rd_kafka_message_t* message)
    -> std::optional<keyroute::stamp> {
    stamp_error e = stamp_error::none;
    auto s = try_read_stamp(message, &e);
    if (!s && e != stamp_error::none) {
        keyroute::detail::runtime_error(std::string("keyroute: malformed ") +
                                        std::string(stamp_header_name) +
                                        " header: " + to_string(e));
    }
    return s;
}

/// read_stamp for a C++ API message.
[[nodiscard]] inline auto read_stamp(RdKafka::Message& message) -> std::optional<keyroute::stamp> {
    return read_stamp(message.c_ptr());
}

}  // namespace keyroute::kafka
