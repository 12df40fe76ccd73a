#pragma once

/// @file
/// The resequencer's store of held events (and of its per-key queues): entries in chunks of
/// 2^bits, so that an entry never moves (the lists and indexes of held events keep slot numbers
/// and pointers into it) and a slot number finds its entry with a shift and a mask. A released slot
/// is reused before a new one is made, the last released first (its memory was touched last).
/// Chunks are made as the peak of held entries grows and kept until destruction: a steady workload
/// allocates nothing.
///
/// Each slot also has a 64-bit tag, stored apart from the entries (8 bytes a slot), so that a
/// check of a slot's tag loads no entry: the resequencer keeps there the serial of the event a
/// slot holds, which its lazily deleted deadlines are checked against.
///
/// Invariants: every slot below made() exists, with its tag (0 while the slot is free); a slot is
/// either allocated or on the free list, once; release() never allocates (the free list has room
/// for every slot made).
///
/// Not thread-safe (one resequencer, one thread).

#include "../detail/config.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

namespace keyroute::detail {

template <class Entry, unsigned bits = 8>
class slab {
    static_assert(bits >= 1 && bits <= 20, "a chunk holds 2 to 2^20 entries");

public:
    static constexpr std::uint32_t chunk_size = std::uint32_t{1} << bits;
    /// The slots a slab can make: the two highest numbers stay free for the owner's marks.
    static constexpr std::uint32_t max_slots = std::numeric_limits<std::uint32_t>::max() - 2;

    slab() = default;
    slab(const slab&) = delete;
    auto operator=(const slab&) -> slab& = delete;
    /// A move leaves the source empty.
    slab(slab&& o) noexcept
        : m_chunks(std::move(o.m_chunks)),
          m_free(std::move(o.m_free)),
          m_tags(std::move(o.m_tags)),
          m_made(o.m_made) {
        o.clear();
    }
    auto operator=(slab&& o) noexcept -> slab& {
        if (this != &o) {
            m_chunks = std::move(o.m_chunks);
            m_free = std::move(o.m_free);
            m_tags = std::move(o.m_tags);
            m_made = o.m_made;
            o.clear();
        }
        return *this;
    }
    ~slab() = default;

    /// The entry of `slot`. @pre slot < made().
    [[nodiscard]] auto operator[](std::uint32_t slot) noexcept -> Entry& {
        return m_chunks[slot >> bits][slot & (chunk_size - 1)];
    }
    [[nodiscard]] auto operator[](std::uint32_t slot) const noexcept -> const Entry& {
        return m_chunks[slot >> bits][slot & (chunk_size - 1)];
    }

    /// A free slot: the last released one, else a new one (a chunk is made every chunk_size new
    /// slots). Its entry is as release() left it, or value-initialised if new.
    /// @throws std::runtime_error past max_slots, std::bad_alloc; nothing changes then.
    [[nodiscard]] auto allocate() -> std::uint32_t {
        if (!m_free.empty()) {
            const std::uint32_t s = m_free.back();
            m_free.pop_back();
            return s;
        }
        if (m_made == max_slots)
            runtime_error("keyroute resequencer: more than 2^32 - 3 held events");
        if ((m_made & (chunk_size - 1)) == 0) {
            m_free.reserve(std::size_t{m_made} + chunk_size);  // release() never allocates
            m_tags.resize(std::size_t{m_made} + chunk_size);
            auto c = std::make_unique<Entry[]>(chunk_size);
            m_chunks.push_back(std::move(c));
        }
        return m_made++;
    }

    /// Puts `slot` on the free list, its tag back to 0. @pre it was allocated and is not
    /// released since.
    void release(std::uint32_t slot) noexcept {
        m_tags[slot] = 0;
        m_free.push_back(slot);
    }

    /// The tag of `slot`. @pre slot < made().
    [[nodiscard]] auto tag(std::uint32_t slot) const noexcept -> std::uint64_t {
        return m_tags[slot];
    }
    void set_tag(std::uint32_t slot, std::uint64_t value) noexcept { m_tags[slot] = value; }

    /// Slots made so far (allocated or free): every slot below it exists.
    [[nodiscard]] auto made() const noexcept -> std::uint32_t { return m_made; }
    /// Slots allocated now.
    [[nodiscard]] auto in_use() const noexcept -> std::size_t { return m_made - m_free.size(); }

private:
    void clear() noexcept {
        m_chunks.clear();
        m_free.clear();
        m_tags.clear();
        m_made = 0;
    }

    std::vector<std::unique_ptr<Entry[]>> m_chunks;
    std::vector<std::uint32_t> m_free;
    std::vector<std::uint64_t> m_tags;  // at least made() of them
    std::uint32_t m_made = 0;
};

}  // namespace keyroute::detail
