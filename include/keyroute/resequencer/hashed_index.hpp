#pragma once

/// @file
/// An open-addressing index from a 64-bit hash to objects the caller stores elsewhere (at
/// stable addresses): the resequencer finds an episode, or the queue of a key on a partition,
/// with one multiplication and, mostly, one probe, where a node-based hash map takes a
/// division and a walk along a chain. Linear probing in a power-of-two table kept at most half
/// full; an erase shifts the entries behind it back, so no tombstones pile up. The table grows
/// with the objects indexed and never shrinks (its size is that of the peak).
///
/// Not thread-safe (one resequencer, one thread).

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace keyroute::detail {

template <class T>
class hashed_index {
public:
    /// The object with hash `h` for which `same(const T&)` holds, or null. O(1) expected.
    template <class Same>
    [[nodiscard]] auto find(std::uint64_t h, Same&& same) const -> T* {
        if (m_slots.empty()) return nullptr;
        for (std::size_t i = home(h);; i = (i + 1) & mask()) {
            const slot& s = m_slots[i];
            if (s.item == nullptr) return nullptr;
            if (s.hash == h && same(std::as_const(*s.item))) return s.item;
        }
    }

    /// Indexes `item` under `h`. @pre item is not indexed. Grows the table when half full.
    void insert(std::uint64_t h, T* item) {
        if (2 * (m_size + 1) > m_slots.size()) grow();
        std::size_t i = home(h);
        while (m_slots[i].item != nullptr) i = (i + 1) & mask();
        m_slots[i] = slot{h, item};
        ++m_size;
    }

    /// Removes `item`, indexed under `h`; does nothing if it is not there.
    void erase(std::uint64_t h, const T* item) noexcept {
        if (m_slots.empty()) return;
        std::size_t i = home(h);
        while (m_slots[i].item != item) {
            if (m_slots[i].item == nullptr) return;
            i = (i + 1) & mask();
        }
        // Backward shift: an entry further on moves into the hole unless its home lies
        // cyclically in (hole, entry], where the hole would hide it from its probe.
        for (std::size_t j = i;;) {
            j = (j + 1) & mask();
            if (m_slots[j].item == nullptr) break;
            const std::size_t k = home(m_slots[j].hash);
            const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
            if (stays) continue;
            m_slots[i] = m_slots[j];
            i = j;
        }
        m_slots[i] = slot{};
        --m_size;
    }

    void clear() noexcept {
        m_slots.clear();
        m_size = 0;
        m_shift = 64;
    }

    [[nodiscard]] auto size() const noexcept -> std::size_t { return m_size; }
    /// Slots in the table (0, or a power of two at least twice size()).
    [[nodiscard]] auto capacity() const noexcept -> std::size_t { return m_slots.size(); }

    hashed_index() = default;
    hashed_index(const hashed_index&) = delete;
    auto operator=(const hashed_index&) -> hashed_index& = delete;
    /// A move leaves the source empty.
    hashed_index(hashed_index&& o) noexcept
        : m_slots(std::move(o.m_slots)),
          m_size(std::exchange(o.m_size, 0)),
          m_shift(std::exchange(o.m_shift, 64)) {
        o.m_slots.clear();
    }
    auto operator=(hashed_index&& o) noexcept -> hashed_index& {
        if (this != &o) {
            m_slots = std::move(o.m_slots);
            o.m_slots.clear();
            m_size = std::exchange(o.m_size, 0);
            m_shift = std::exchange(o.m_shift, 64);
        }
        return *this;
    }
    ~hashed_index() = default;

private:
    struct slot {
        std::uint64_t hash = 0;
        T* item = nullptr;  // null: empty
    };

    // Fibonacci hashing: the top bits of h times 2^64 / phi, so that similar hashes spread.
    [[nodiscard]] auto home(std::uint64_t h) const noexcept -> std::size_t {
        return static_cast<std::size_t>((h * 0x9e3779b97f4a7c15ULL) >> m_shift);
    }
    [[nodiscard]] auto mask() const noexcept -> std::size_t { return m_slots.size() - 1; }

    void grow() {
        std::vector<slot> old = std::move(m_slots);
        const std::size_t size = old.empty() ? 16 : 2 * old.size();
        m_slots.assign(size, slot{});
        unsigned bits = 0;
        while ((std::size_t{1} << bits) < size) ++bits;
        m_shift = 64 - bits;
        for (const slot& s : old) {
            if (s.item == nullptr) continue;
            std::size_t i = home(s.hash);
            while (m_slots[i].item != nullptr) i = (i + 1) & mask();
            m_slots[i] = s;
        }
    }

    std::vector<slot> m_slots;
    std::size_t m_size = 0;
    unsigned m_shift = 64;  // 64 - log2(capacity)
};

}  // namespace keyroute::detail
