#pragma once

/// @file
/// The resequencer's episodes: every (producer, lane, episode) it remembers, found by its key in
/// one probe (hashed_index.hpp), at an address that never changes while it is remembered, and
/// the idle ones (holding no event, waiting for no re-read) in a list from least to most
/// recently idle, so that forgetting the oldest costs O(1) each.
///
/// `Episode` derives from `episode_hook<Episode>`, which holds its key and its idle-list links;
/// the table sets them, the owner does not write them. An episode is on the idle list only
/// between set_idle() and set_busy() (or its removal): an episode that holds events is never
/// forgotten.
///
/// Not thread-safe (one resequencer, one thread).

#include "../detail/config.hpp"
#include "hashed_index.hpp"

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>

namespace keyroute::detail {

/// The identity of an episode: the stamp fields (producer, lane, episode).
struct episode_key {
    std::uint64_t producer;
    std::uint16_t lane;
    std::uint64_t episode;
    friend auto operator==(const episode_key& a, const episode_key& b) noexcept -> bool {
        return a.producer == b.producer && a.lane == b.lane && a.episode == b.episode;
    }
};

struct episode_key_hash {
    [[nodiscard]] auto operator()(const episode_key& k) const noexcept -> std::size_t {
        std::uint64_t h = k.producer * 0x9e3779b97f4a7c15ULL;
        h ^= (k.episode + (std::uint64_t{k.lane} << 48U)) * 0xc2b2ae3d27d4eb4fULL;
        h ^= h >> 29U;
        return static_cast<std::size_t>(h);
    }
};

template <class Episode>
class episode_table;

/// What the table keeps in each episode. Read-only to the owner.
template <class Episode>
class episode_hook {
public:
    [[nodiscard]] auto id() const noexcept -> const episode_key& { return m_id; }
    [[nodiscard]] auto idle() const noexcept -> bool { return m_idle; }

private:
    friend class episode_table<Episode>;
    episode_key m_id{};
    Episode* m_idle_prev = nullptr;
    Episode* m_idle_next = nullptr;
    bool m_idle = false;
};

template <class Episode>
class episode_table {
public:
    episode_table() = default;
    episode_table(const episode_table&) = delete;
    auto operator=(const episode_table&) -> episode_table& = delete;
    /// A move takes the episodes (at their addresses) and leaves the source empty.
    episode_table(episode_table&& o) noexcept
        : m_map(std::move(o.m_map)),
          m_index(std::move(o.m_index)),
          m_idle_head(o.m_idle_head),
          m_idle_tail(o.m_idle_tail),
          m_idle_count(o.m_idle_count) {
        o.reset();
    }
    auto operator=(episode_table&& o) noexcept -> episode_table& {
        if (this != &o) {
            m_map = std::move(o.m_map);
            m_index = std::move(o.m_index);
            m_idle_head = o.m_idle_head;
            m_idle_tail = o.m_idle_tail;
            m_idle_count = o.m_idle_count;
            o.reset();
        }
        return *this;
    }
    ~episode_table() = default;

    /// The episode `id`, or null if it is not remembered. O(1) expected.
    [[nodiscard]] auto find(const episode_key& id) const -> Episode* {
        return m_index.find(episode_key_hash{}(id),
                            [&](const Episode& ep) { return ep.id() == id; });
    }

    /// The episode `id`; if it is not remembered, a new one (busy), on which `init(Episode&)`
    /// is called first. @throws what allocation or `init` throws; nothing is kept then.
    template <class Init>
    auto find_or_make(const episode_key& id, Init&& init) -> Episode& {
        if (Episode* ep = find(id)) return *ep;
        const std::size_t h = episode_key_hash{}(id);
        const auto it = m_map.try_emplace(id).first;  // not found: made now
        Episode& ep = it->second;
        static_cast<episode_hook<Episode>&>(ep).m_id = id;
#if KEYROUTE_HAS_EXCEPTIONS
        try {
            std::forward<Init>(init)(ep);
            m_index.insert(h, &ep);
        } catch (...) {
            m_map.erase(it);
            throw;
        }
#else
        std::forward<Init>(init)(ep);
        m_index.insert(h, &ep);
#endif
        return ep;
    }

    /// Puts `ep` at the most recently idle end of the idle list (moving it there if it is on
    /// it already).
    void set_idle(Episode& ep) noexcept {
        set_busy(ep);
        auto& hook = hook_of(ep);
        hook.m_idle = true;
        hook.m_idle_prev = m_idle_tail;
        if (m_idle_tail != nullptr) hook_of(*m_idle_tail).m_idle_next = &ep;
        else m_idle_head = &ep;
        m_idle_tail = &ep;
        ++m_idle_count;
    }

    /// Takes `ep` off the idle list, if it is on it.
    void set_busy(Episode& ep) noexcept {
        auto& hook = hook_of(ep);
        if (!hook.m_idle) return;
        if (hook.m_idle_prev != nullptr) hook_of(*hook.m_idle_prev).m_idle_next = hook.m_idle_next;
        else m_idle_head = hook.m_idle_next;
        if (hook.m_idle_next != nullptr) hook_of(*hook.m_idle_next).m_idle_prev = hook.m_idle_prev;
        else m_idle_tail = hook.m_idle_prev;
        hook.m_idle = false;
        hook.m_idle_prev = hook.m_idle_next = nullptr;
        --m_idle_count;
    }

    /// Forgets idle episodes, least recently idle first, while more than `keep` are idle or the
    /// oldest is `expired(const Episode&)`. Returns how many it forgot. Busy episodes stay.
    template <class Expired>
    auto forget_idle(std::size_t keep, Expired&& expired) -> std::size_t {
        // The common case, nothing to forget, in a few instructions (it runs on every push).
        if (m_idle_head == nullptr || (m_idle_count <= keep && !expired(*m_idle_head))) return 0;
        return forget_idle_slow(keep, expired);
    }

    /// Calls `f(Episode&)` on every episode, in an unspecified order that only insertions and
    /// removals change. `f` must not insert or remove.

    template <class F>
    void for_each(F&& f) {
        for (auto& kv : m_map) f(kv.second);
    }
    template <class F>
    void for_each(F&& f) const {
        for (const auto& kv : m_map) f(kv.second);
    }

    /// Calls `f(const Episode&)` on at most `n` idle episodes, most recently idle first.
    template <class F>
    void for_each_newest_idle(std::size_t n, F&& f) const {
        for (const Episode* ep = m_idle_tail; ep != nullptr && n > 0; --n) {
            f(*ep);
            ep = static_cast<const episode_hook<Episode>&>(*ep).m_idle_prev;
        }
    }

    /// Episodes remembered (busy or idle).
    [[nodiscard]] auto size() const noexcept -> std::size_t { return m_map.size(); }
    [[nodiscard]] auto empty() const noexcept -> bool { return m_map.empty(); }
    /// Episodes on the idle list.
    [[nodiscard]] auto idle_count() const noexcept -> std::size_t { return m_idle_count; }
    /// The least recently idle episode, or null.
    [[nodiscard]] auto oldest_idle() const noexcept -> Episode* { return m_idle_head; }

private:
    template <class Expired>
    [[gnu::noinline]] auto forget_idle_slow(std::size_t keep, Expired& expired) -> std::size_t {
        std::size_t forgotten = 0;
        while (m_idle_head != nullptr && (m_idle_count > keep || expired(*m_idle_head))) {
            Episode& ep = *m_idle_head;
            set_busy(ep);
            const episode_key id = ep.id();
            m_index.erase(episode_key_hash{}(id), &ep);
            m_map.erase(id);
            ++forgotten;
        }
        return forgotten;
    }

    static auto hook_of(Episode& ep) noexcept -> episode_hook<Episode>& { return ep; }

    void reset() noexcept {
        m_map.clear();
        m_index.clear();
        m_idle_head = m_idle_tail = nullptr;
        m_idle_count = 0;
    }

    std::unordered_map<episode_key, Episode, episode_key_hash> m_map;  // owns them (stable nodes)
    hashed_index<Episode> m_index;                                     // finds them
    Episode* m_idle_head = nullptr;
    Episode* m_idle_tail = nullptr;
    std::size_t m_idle_count = 0;
};

}  // namespace keyroute::detail
