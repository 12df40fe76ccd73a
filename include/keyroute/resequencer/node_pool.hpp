#pragma once

/// @file
/// Recycled fixed-size blocks for the resequencer's node-based containers (an episode's held
/// sequences, the index of its per-key partition queues). A freed node goes to the free list
/// of its size and the next node of that size takes it, so holding and releasing events in a
/// steady state allocates nothing. Blocks are carved from chunks, which go back to the system
/// only when the pool dies (with the last allocator that refers to it): the pool's memory is
/// its peak use, as the containers' own would be.
///
/// Not thread-safe: a pool belongs to one resequencer, which belongs to one thread.

#include <array>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace keyroute::detail {

/// Blocks of up to max_block bytes, in size classes of `grain` bytes, each class with its free
/// list. Every block is aligned to `grain`.
class node_pool {
public:
    static constexpr std::size_t grain = alignof(std::max_align_t);
    static constexpr std::size_t max_block = 256;
    /// Blocks carved at once when a class's free list is empty.
    static constexpr std::size_t blocks_per_chunk = 64;

    node_pool() = default;
    node_pool(const node_pool&) = delete;
    auto operator=(const node_pool&) -> node_pool& = delete;
    node_pool(node_pool&&) = delete;
    auto operator=(node_pool&&) -> node_pool& = delete;
    ~node_pool() = default;

    /// Whether an object of this size and alignment comes from a pool (else operator new).
    [[nodiscard]] static constexpr auto pooled(std::size_t bytes, std::size_t align) noexcept
        -> bool {
        return bytes != 0 && bytes <= max_block && align <= grain;
    }

    /// A block of at least `bytes`. @pre pooled(bytes, alignment of its object)
    /// @throws std::bad_alloc if a new chunk cannot be had.
    [[nodiscard]] auto allocate(std::size_t bytes) -> void* {
        free_block*& head = m_free[size_class(bytes)];
        if (head == nullptr) refill(size_class(bytes));
        free_block* b = head;
        head = b->next;
        ++m_in_use;
        return b;
    }

    /// Returns a block allocate(bytes) gave, with the same `bytes`.
    void deallocate(void* p, std::size_t bytes) noexcept {
        free_block*& head = m_free[size_class(bytes)];
        head = ::new (p) free_block{head};
        --m_in_use;
    }

    /// Blocks handed out and not returned.
    [[nodiscard]] auto in_use() const noexcept -> std::size_t { return m_in_use; }
    /// Chunks carved so far (each blocks_per_chunk blocks of one class): the pool's memory.
    [[nodiscard]] auto chunks() const noexcept -> std::size_t { return m_chunks.size(); }

private:
    struct free_block {
        free_block* next;
    };
    static_assert(sizeof(free_block) <= grain && alignof(free_block) <= grain);

    [[nodiscard]] static constexpr auto size_class(std::size_t bytes) noexcept -> std::size_t {
        return (bytes + grain - 1) / grain - 1;
    }

    void refill(std::size_t cls) {
        const std::size_t size = (cls + 1) * grain;
        m_chunks.reserve(m_chunks.size() + 1);  // so that the push below cannot throw
        // An array new of std::byte is aligned for any object of its size (grain at least).
        std::unique_ptr<std::byte[]> chunk(new std::byte[size * blocks_per_chunk]);
        free_block* head = m_free[cls];
        for (std::size_t i = blocks_per_chunk; i-- > 0;) {
            head = ::new (static_cast<void*>(chunk.get() + i * size)) free_block{head};
        }
        m_free[cls] = head;
        m_chunks.push_back(std::move(chunk));
    }

    std::array<free_block*, max_block / grain> m_free{};
    std::vector<std::unique_ptr<std::byte[]>> m_chunks;
    std::size_t m_in_use = 0;
};

/// A standard allocator over a shared node_pool: single objects that fit a pool block come from
/// it, anything else (arrays such as a hash table's buckets) from operator new. Without a pool
/// (default-constructed) it is std::allocator. It propagates with the container's contents, so
/// a node always returns to the pool it came from; the pool lives as long as any copy.
template <class T>
class pool_allocator {
public:
    using value_type = T;
    using propagate_on_container_copy_assignment = std::true_type;
    using propagate_on_container_move_assignment = std::true_type;
    using propagate_on_container_swap = std::true_type;

    pool_allocator() noexcept = default;
    explicit pool_allocator(std::shared_ptr<node_pool> pool) noexcept : m_pool(std::move(pool)) {}
    template <class U>
    // NOLINTNEXTLINE(google-explicit-constructor): allocators convert implicitly when rebound
    pool_allocator(const pool_allocator<U>& other) noexcept : m_pool(other.pool()) {}

    [[nodiscard]] auto allocate(std::size_t n) -> T* {
        if (from_pool(n)) return static_cast<T*>(m_pool->allocate(sizeof(T)));
        return std::allocator<T>{}.allocate(n);
    }
    void deallocate(T* p, std::size_t n) noexcept {
        if (from_pool(n)) {
            m_pool->deallocate(p, sizeof(T));
        } else {
            std::allocator<T>{}.deallocate(p, n);
        }
    }

    [[nodiscard]] auto pool() const noexcept -> const std::shared_ptr<node_pool>& { return m_pool; }

private:
    [[nodiscard]] auto from_pool(std::size_t n) const noexcept -> bool {
        return n == 1 && m_pool != nullptr && node_pool::pooled(sizeof(T), alignof(T));
    }
    std::shared_ptr<node_pool> m_pool;
};

template <class T, class U>
[[nodiscard]] auto operator==(const pool_allocator<T>& a, const pool_allocator<U>& b) noexcept
    -> bool {
    return a.pool() == b.pool();
}
template <class T, class U>
[[nodiscard]] auto operator!=(const pool_allocator<T>& a, const pool_allocator<U>& b) noexcept
    -> bool {
    return !(a == b);
}

}  // namespace keyroute::detail
