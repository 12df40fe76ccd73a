// detail::fill_level on its own: the level moves to the goal less the margin less what tracked
// keys took a partition over it; untracked load does not lower it (it can raise the goal); the
// window after the first only raises it; a late-enough note is needed; the bounds hold.
#include "keyroute_catch.hpp"

#include <keyroute/router/fill_level.hpp>

#include <vector>

namespace {

using keyroute::detail::fill_level;

// One note over partitions with these loads and untracked loads (mean 100), then a new window.
void window(fill_level& f, const std::vector<double>& load, const std::vector<double>& untracked,
            bool follows = true, double at = 0.99) {
    f.note(
        static_cast<std::uint32_t>(load.size()), 100.0, at,
        [&](std::uint32_t p) { return load[p]; }, [&](std::uint32_t p) { return untracked[p]; });
    f.next_window(follows);
}

}  // namespace

TEST_CASE(
    "fill_level: starts at 1.05; a window under its level raises it to the goal less the "
    "margin, at most 1.08",
    "[router][fill_level]") {
    fill_level f;
    CHECK(f.level() == Approx(1.05));
    CHECK(f.published() == Approx(1.05));
    window(f, {100, 104, 90}, {60, 50, 40});  // the first window's end: may raise
    CHECK(f.level() == Approx(1.08));
    CHECK(f.published() == Approx(1.05));  // until published
    f.publish();
    CHECK(f.published() == Approx(1.08));
}

TEST_CASE(
    "fill_level: what tracked keys took a partition over the level lowers the next by as "
    "much",
    "[router][fill_level]") {
    fill_level f;
    window(f, {100, 100}, {50, 50});  // second window: 1.08
    window(f, {100, 100}, {50, 50});  // from the third on, both ways
    REQUIRE(f.level() == Approx(1.08));
    // Partition 0 ends at 1.11: 0.03 over the level, all of it tracked keys' events.
    window(f, {111, 95}, {60, 50});
    CHECK(f.level() == Approx(1.10 - 0.01 - 0.03));
    // Over by 0.20: the level stops at 1.02.
    window(f, {126, 95}, {60, 50});
    CHECK(f.level() == Approx(1.02));
    // Back under: up to the top again.
    window(f, {100, 95}, {60, 50});
    CHECK(f.level() == Approx(1.08));
}

TEST_CASE("fill_level: untracked load over the level does not lower it, and raises the goal",
          "[router][fill_level]") {
    fill_level f;
    window(f, {100, 100}, {50, 50});
    window(f, {100, 100}, {50, 50});
    REQUIRE(f.level() == Approx(1.08));
    // Partition 0 at 1.30 with 0.05 of it tracked keys': over the level by 0.22, but only 0.05
    // of that could have gone elsewhere. The goal is 1.25 + 0.02 there (keys under a tenth must
    // stay home), so the level stays at its top (either rule alone would take it to 1.04).
    window(f, {130, 95}, {125, 50});
    CHECK(f.level() == Approx(1.08));
    // 1.12 of untracked load and 0.06 of tracked keys' over it: goal 1.14, less 0.01 and 0.06.
    window(f, {118, 95}, {112, 50});
    CHECK(f.level() == Approx(1.14 - 0.01 - 0.06));
}

TEST_CASE(
    "fill_level: the window after the first, or after a gap, only raises it; an early note "
    "changes nothing",
    "[router][fill_level]") {
    fill_level f;
    window(f, {150, 60}, {50, 50});  // the first window overshot (its plans were projections)
    CHECK(f.level() == Approx(1.05));
    window(f, {100, 100}, {50, 50});
    REQUIRE(f.level() == Approx(1.08));
    window(f, {150, 60}, {50, 50}, /*follows=*/false);  // a gap: nothing to follow
    CHECK(f.level() == Approx(1.08));
    window(f, {150, 60}, {50, 50});  // right after the gap: only raises
    CHECK(f.level() == Approx(1.08));
    window(f, {150, 60}, {50, 50}, true, /*at=*/0.5);  // the last note came too early
    CHECK(f.level() == Approx(1.08));
    window(f, {150, 60}, {50, 50});
    CHECK(f.level() == Approx(1.02));
}
