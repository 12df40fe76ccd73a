// detail::key_queue: a key in place up to short_key bytes and in long_key beyond, each read back
// whole across a recycle to a key of the other kind; recycling empties it and keeps the long
// key's buffer.
#include "keyroute_catch.hpp"

#include <keyroute/resequencer/key_queue.hpp>

#include <cstddef>
#include <string>

using keyroute::detail::key_queue;

TEST_CASE("key_queue: keys of every length around short_key read back whole",
          "[resequencer][key_queue]") {
    key_queue q;
    for (const std::size_t n : {std::size_t{0}, std::size_t{1}, key_queue::short_key - 1,
                                key_queue::short_key, key_queue::short_key + 1, std::size_t{300}}) {
        std::string k;
        for (std::size_t i = 0; i < n; ++i) k.push_back(static_cast<char>('a' + i % 26));
        q.set_key(k);
        CHECK(q.key() == k);
        q.set_key("x");  // a short key after a long one is not the long one's tail
        CHECK(q.key() == "x");
        q.set_key(k);
        CHECK(q.key() == k);
    }
}

TEST_CASE("key_queue: recycle empties it and keeps the long key's buffer",
          "[resequencer][key_queue]") {
    key_queue q;
    const std::string long_key(100, 'k');
    q.set_key(long_key);
    const auto capacity = q.long_key.capacity();
    q.events.first = q.events.last = 7;
    q.count = 1;
    q.unstamped = 1;
    q.emptied = true;
    q.dirty = true;
    q.count = 0;  // its events released
    q.recycle();
    CHECK(q.events.empty());
    CHECK(q.size() == 0);
    CHECK(q.unstamped == 0);
    CHECK_FALSE(q.emptied);
    CHECK(q.dirty);  // the owner's scan list may still name it
    q.set_key(std::string(90, 'm'));
    CHECK(q.long_key.capacity() == capacity);
    CHECK(q.key() == std::string(90, 'm'));
}

TEST_CASE("key_queue: what a push, a scan and a release read is in its first cache line",
          "[resequencer][key_queue]") {
    CHECK(alignof(key_queue) == 64);
    const key_queue q;
    const auto* base = reinterpret_cast<const char*>(&q);
    const auto within = [&](const void* field, std::size_t size) {
        return static_cast<const char*>(field) - base + static_cast<std::ptrdiff_t>(size) <= 64;
    };
    CHECK(within(&q.key_bytes, sizeof q.key_bytes));
    CHECK(within(&q.key_size, sizeof q.key_size));
    CHECK(within(&q.partition, sizeof q.partition));
    CHECK(within(&q.hash, sizeof q.hash));
    CHECK(within(&q.events, sizeof q.events));
    CHECK(within(&q.count, sizeof q.count));
    CHECK(within(&q.unstamped, sizeof q.unstamped));
    CHECK(within(&q.dirty, sizeof q.dirty));
    CHECK(within(&q.emptied, sizeof q.emptied));
    CHECK(within(&q.id, sizeof q.id));
}
