// detail::node_pool and pool_allocator: a freed block is the next one handed out for its size
// class, chunks are carved only when a class runs dry, and containers using the allocator
// behave as with std::allocator (moves and swaps carry the pool along).
#include "keyroute_catch.hpp"

#include <keyroute/resequencer/node_pool.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

using keyroute::detail::node_pool;
using keyroute::detail::pool_allocator;

TEST_CASE("node_pool: freed blocks are reused, chunks grow only with the peak",
          "[resequencer][node_pool]") {
    node_pool pool;
    CHECK(pool.chunks() == 0);
    void* a = pool.allocate(40);
    void* b = pool.allocate(48);  // the same 48-byte class
    CHECK(pool.chunks() == 1);
    CHECK(pool.in_use() == 2);
    CHECK(a != b);
    pool.deallocate(a, 40);
    CHECK(pool.allocate(33) == a);   // last freed, first reused
    void* small = pool.allocate(8);  // another class: another chunk
    CHECK(pool.chunks() == 2);
    CHECK(reinterpret_cast<std::uintptr_t>(small) % node_pool::grain == 0);
    // A peak of 3 chunks' worth of one class, freed and taken again: no new chunk.
    std::vector<void*> held;
    for (std::size_t i = 0; i < 3 * node_pool::blocks_per_chunk; ++i)
        held.push_back(pool.allocate(100));
    const std::size_t chunks = pool.chunks();
    std::set<void*> distinct(held.begin(), held.end());
    CHECK(distinct.size() == held.size());
    for (int round = 0; round < 10; ++round) {
        for (void* p : held) pool.deallocate(p, 100);
        for (void*& p : held) p = pool.allocate(100);
    }
    CHECK(pool.chunks() == chunks);
    for (void* p : held) pool.deallocate(p, 100);
    pool.deallocate(b, 48);
    pool.deallocate(a, 40);
    pool.deallocate(small, 8);
    CHECK(pool.in_use() == 0);
    CHECK_FALSE(node_pool::pooled(node_pool::max_block + 1, 8));
    CHECK_FALSE(node_pool::pooled(16, 2 * node_pool::grain));
}

TEST_CASE("pool_allocator: a map's nodes come from the pool and return to it",
          "[resequencer][node_pool]") {
    using alloc = pool_allocator<std::pair<const std::uint64_t, std::uint32_t>>;
    using map = std::map<std::uint64_t, std::uint32_t, std::less<>, alloc>;
    auto pool = std::make_shared<node_pool>();
    {
        map m{alloc(pool)};
        for (std::uint32_t i = 0; i < 1000; ++i) m.emplace(i * 7 % 1000, i);
        CHECK(pool->in_use() == 1000);
        const std::size_t chunks = pool->chunks();
        for (int round = 0; round < 5; ++round) {
            for (std::uint64_t k = 0; k < 1000; k += 2) m.erase(k);
            for (std::uint64_t k = 0; k < 1000; k += 2) m.emplace(k, 1);
        }
        CHECK(pool->chunks() == chunks);
        CHECK(m.size() == 1000);
        CHECK(m.begin()->first == 0);
        // A move carries the nodes and the pool; the moved-to map frees them into it.
        map other;
        other = std::move(m);
        CHECK(other.get_allocator() == alloc(pool));
        CHECK(other.size() == 1000);
        map third{alloc(pool)};
        third.emplace(5, 5);
        std::swap(third, other);
        CHECK(third.size() == 1000);
        CHECK(other.size() == 1);
    }
    CHECK(pool->in_use() == 0);
    // Without a pool it is std::allocator; arrays never come from the pool.
    map plain;
    plain.emplace(1, 1);
    CHECK(plain.size() == 1);
    std::unordered_map<std::uint64_t, int, std::hash<std::uint64_t>, std::equal_to<>,
                       pool_allocator<std::pair<const std::uint64_t, int>>>
        hashed{pool_allocator<std::pair<const std::uint64_t, int>>(pool)};
    for (int i = 0; i < 100; ++i) hashed.emplace(static_cast<std::uint64_t>(i), i);
    CHECK(pool->in_use() == 100);  // nodes only: the bucket array is operator new's
    hashed.clear();
    CHECK(pool->in_use() == 0);
}
