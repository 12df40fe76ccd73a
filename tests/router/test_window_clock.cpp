// detail::window_clock: windows are floor(ticks / len), aligned to the epoch; the current
// window only moves forward; a jump of more than an hour needs a second event near it.
#include "keyroute_catch.hpp"

#include <keyroute/router/window_clock.hpp>

#include <cstdint>
#include <limits>

using keyroute::detail::no_window;
using keyroute::detail::window_clock;

TEST_CASE("window_clock: floor division on both sides of the epoch", "[router][window_clock]") {
    const window_clock c(60, 60);
    CHECK(c.window_of(0) == 0);
    CHECK(c.window_of(59) == 0);
    CHECK(c.window_of(60) == 1);
    CHECK(c.window_of(-1) == -1);
    CHECK(c.window_of(-60) == -1);
    CHECK(c.window_of(-61) == -2);
    const auto b = c.bounds(-2);
    CHECK(b.lo == -120);
    CHECK(b.hi == -60);
    CHECK(c.position(-90, -2) == 0.5);
    CHECK(c.position(-200, -2) == 0.0);  // before: 0
    CHECK(c.position(0, -2) == 1.0);     // after: 1
}

TEST_CASE("window_clock: bounds at the ends of the tick range are empty, never wrapped",
          "[router][window_clock]") {
    const window_clock c(1000, 3600);
    const std::int64_t top = std::numeric_limits<std::int64_t>::max();
    const auto w = c.window_of(top);
    const auto b = c.bounds(w);
    CHECK(b.lo == b.hi);  // lo + len overflows: no bounds cached
    CHECK(c.bounds(w - 1).hi > c.bounds(w - 1).lo);
    CHECK(c.position(top, w) == 0.0);
}

TEST_CASE("window_clock: the current window only moves forward", "[router][window_clock]") {
    window_clock c(60, 60);
    CHECK(c.current() == no_window);
    CHECK(c.observe(7) == 7);  // the first event's window is taken as it comes
    CHECK(c.observe(5) == 7);  // earlier: counts in the current one
    CHECK(c.observe(8) == 8);
    CHECK(c.current() == 8);
}

TEST_CASE("window_clock: a jump of more than an hour takes a second event near it",
          "[router][window_clock]") {
    window_clock c(60, 60);  // a jump is more than 60 windows
    REQUIRE(c.observe(100) == 100);
    CHECK(c.observe(100 + 60) == 160);     // exactly the limit: moves
    CHECK(c.observe(100000) == 160);       // one stray time far ahead: stays
    CHECK(c.observe(200) == 200);          // a near time moves it as before
    CHECK(c.observe(900000) == 200);       // another stray
    CHECK(c.observe(5000000) == 200);      // and another, not near the first
    CHECK(c.observe(5000001) == 5000001);  // within one window of the last: a real jump
}
