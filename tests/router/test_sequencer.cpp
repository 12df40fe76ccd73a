// detail::sequencer: which events of a key on a lane carry stamps, and which must go home.
#include "keyroute_catch.hpp"

#include <keyroute/router/sequencer.hpp>

#include <cstdint>
#include <vector>

using keyroute::detail::sequencer;

TEST_CASE("sequencer: a home stretch is unstamped; a spread stretch opens on home from 0",
          "[router][sequencer]") {
    sequencer s;
    std::uint64_t episodes = 0;
    for (int i = 0; i < 3; ++i) {
        const auto e = s.next(false, episodes, 1, 1000);
        CHECK(e.episode == 0);
        CHECK_FALSE(e.must_go_home);  // home anyway: unstamped events always are
        CHECK_FALSE(e.spread);
    }
    const auto first = s.next(true, episodes, 1, 1000);
    CHECK(first.episode == 1);
    CHECK(first.sequence == 0);
    CHECK(first.must_go_home);
    CHECK(first.opened);
    for (std::uint64_t i = 1; i < 5; ++i) {
        const auto e = s.next(true, episodes, 1, 1000);
        CHECK(e.episode == 1);
        CHECK(e.sequence == i);
        CHECK_FALSE(e.must_go_home);
        CHECK(e.spread);
    }
    // The first event after the stretch: stamped, home, the episode's last; then unstamped.
    const auto close = s.next(false, episodes, 1, 1000);
    CHECK(close.episode == 1);
    CHECK(close.sequence == 5);
    CHECK(close.must_go_home);
    CHECK(close.closed);
    CHECK_FALSE(close.spread);
    CHECK(s.next(false, episodes, 1, 1000).episode == 0);
    CHECK_FALSE(s.open());
}

TEST_CASE("sequencer: episode ids only grow, by the lane's step", "[router][sequencer]") {
    sequencer a;
    sequencer b;
    std::uint64_t episodes = std::uint64_t{3} - 4U;  // a lane whose ids are 3, 7, 11, ...
    std::vector<std::uint64_t> ids;
    for (int round = 0; round < 3; ++round) {
        ids.push_back(a.next(true, episodes, 4, 1000).episode);
        ids.push_back(b.next(true, episodes, 4, 1000).episode);
        (void)a.next(false, episodes, 4, 1000);
        (void)b.next(false, episodes, 4, 1000);
    }
    CHECK(ids == std::vector<std::uint64_t>{3, 7, 11, 15, 19, 23});
}

TEST_CASE("sequencer: the last number ends the episode on home; the next spread opens another",
          "[router][sequencer]") {
    sequencer s;
    std::uint64_t episodes = 0;
    const auto open = s.next(true, episodes, 1, 3);
    CHECK(open.sequence == 0);
    CHECK(s.next(true, episodes, 1, 3).sequence == 1);
    CHECK(s.next(true, episodes, 1, 3).sequence == 2);
    const auto last = s.next(true, episodes, 1, 3);
    CHECK(last.sequence == 3);
    CHECK(last.must_go_home);
    CHECK(last.closed);
    CHECK_FALSE(s.open());
    const auto again = s.next(true, episodes, 1, 3);
    CHECK(again.episode == 2);
    CHECK(again.sequence == 0);
    CHECK(again.must_go_home);
}

TEST_CASE("sequencer: reset forgets an open stretch", "[router][sequencer]") {
    sequencer s;
    std::uint64_t episodes = 0;
    (void)s.next(true, episodes, 1, 100);
    REQUIRE(s.open());
    s.reset();
    CHECK_FALSE(s.open());
    CHECK(s.next(false, episodes, 1, 100).episode == 0);  // no closing event for another key
}

TEST_CASE("sequencer: continue_stretch is next(true) for an event that neither opens nor closes",
          "[router][sequencer]") {
    // Two sequencers fed the same events, one through continue_stretch wherever it accepts: the
    // same stamps, and it declines exactly where next() would open or close a stretch.
    sequencer a;
    sequencer b;
    std::uint64_t episodes_a = 0;
    std::uint64_t episodes_b = 0;
    const std::uint32_t last = 5;
    std::uint64_t accepted = 0;
    for (int i = 0; i < 40; ++i) {
        const bool spread = i % 13 != 12;  // a home event now and then closes the stretch
        const auto want = a.next(spread, episodes_a, 1, last);
        std::uint64_t episode = 0;
        std::uint64_t sequence = 0;
        if (spread && b.continue_stretch(last, episode, sequence)) {
            ++accepted;
            CHECK_FALSE(want.opened);
            CHECK_FALSE(want.closed);
            CHECK(episode == want.episode);
            CHECK(sequence == want.sequence);
            continue;
        }
        if (spread) CHECK((want.opened || want.closed));
        const auto got = b.next(spread, episodes_b, 1, last);
        CHECK(got.episode == want.episode);
        CHECK(got.sequence == want.sequence);
        CHECK(got.closed == want.closed);
        CHECK(got.opened == want.opened);
    }
    CHECK(accepted > 20);
    CHECK(a.open() == b.open());
}

TEST_CASE("sequencer: close_next makes the next event close the stretch on home, then reopens",
          "[router][sequencer]") {
    sequencer s;
    std::uint64_t episodes = 0;
    s.close_next();  // nothing open: nothing to close
    CHECK_FALSE(s.closing());
    for (int i = 0; i < 4; ++i) (void)s.next(true, episodes, 1, 1000);  // sequences 0 to 3
    s.close_next();
    CHECK(s.closing());
    const auto close = s.next(true, episodes, 1, 1000);  // the plan would spread it: closed anyway
    CHECK(close.episode == 1);
    CHECK(close.sequence == 4);  // no gap
    CHECK(close.must_go_home);
    CHECK(close.closed);
    CHECK_FALSE(close.spread);
    CHECK_FALSE(s.closing());
    CHECK_FALSE(s.open());
    const auto again = s.next(true, episodes, 1, 1000);
    CHECK(again.opened);
    CHECK(again.episode == 2);
    CHECK(again.sequence == 0);
}
