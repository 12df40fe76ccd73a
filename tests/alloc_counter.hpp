#pragma once
// Replaces global operator new and delete (every replaceable form, so that each new is paired
// with a matching delete, as sanitizers check) with versions that count allocations. Include it
// in exactly one translation unit of a test executable.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {
std::atomic<std::uint64_t> allocations{0};
}  // namespace

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
