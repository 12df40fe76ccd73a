// Routing with the resize partitioners never allocates: global operator new is counted here,
// and must not move during a million routes.
#include "keyroute_catch.hpp"

#include <keyroute/jump.hpp>
#include <keyroute/key_group.hpp>
#include <keyroute/maglev.hpp>
#include <keyroute/rendezvous.hpp>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

namespace {
std::atomic<std::uint64_t> allocations{0};
}  // namespace

// Every replaceable form, so that each new is paired with a matching delete (sanitizers check).
namespace {
auto counted_alloc(std::size_t size) noexcept -> void* {
    allocations.fetch_add(1, std::memory_order_relaxed);
    return std::malloc(size == 0 ? 1 : size);
}
auto counted_aligned_alloc(std::size_t size, std::align_val_t align) noexcept -> void* {
    allocations.fetch_add(1, std::memory_order_relaxed);
    const auto a = static_cast<std::size_t>(align);
    return std::aligned_alloc(a, (size + a - 1) / a * a);
}
auto or_throw(void* p) -> void* {
    if (p == nullptr) throw std::bad_alloc();
    return p;
}
}  // namespace

auto operator new(std::size_t size) -> void* { return or_throw(counted_alloc(size)); }
auto operator new[](std::size_t size) -> void* { return or_throw(counted_alloc(size)); }
auto operator new(std::size_t size, const std::nothrow_t&) noexcept -> void* {
    return counted_alloc(size);
}
auto operator new[](std::size_t size, const std::nothrow_t&) noexcept -> void* {
    return counted_alloc(size);
}
auto operator new(std::size_t size, std::align_val_t align) -> void* {
    return or_throw(counted_aligned_alloc(size, align));
}
auto operator new[](std::size_t size, std::align_val_t align) -> void* {
    return or_throw(counted_aligned_alloc(size, align));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

template <class P>
auto allocations_during_routes(const P& p, const std::vector<std::string>& keys) -> std::uint64_t {
    std::uint64_t sum = 0;
    const std::uint64_t before = allocations.load();
    for (int round = 0; round < 4; ++round) {
        for (const auto& k : keys) sum += p.route(k);
    }
    const std::uint64_t after = allocations.load();
    CHECK(sum > 0);
    return after - before;
}

}  // namespace

TEST_CASE("route() does not allocate", "[resize][alloc]") {
    std::vector<std::string> keys;
    for (int i = 0; i < 4096; ++i) keys.push_back("a-rather-long-key-that-defeats-sso-" + std::to_string(i));
    REQUIRE(allocations.load() >= keys.size());  // the counter works: building keys allocated

    CHECK(allocations_during_routes(keyroute::jump_partitioner<>(100), keys) == 0);
    CHECK(allocations_during_routes(keyroute::rendezvous_partitioner<>(100), keys) == 0);
    const keyroute::rendezvous_partitioner<> weighted(std::vector<std::uint32_t>{1, 2, 3},
                                                      {1.0, 2.0, 3.0});
    CHECK(allocations_during_routes(weighted, keys) == 0);
    CHECK(allocations_during_routes(keyroute::maglev_partitioner<>(100), keys) == 0);
    CHECK(allocations_during_routes(keyroute::key_group_partitioner<>(100), keys) == 0);
}
