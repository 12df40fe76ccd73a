// detail::partition_offsets: a partition's read position (duplicates by offset, re-reads after a
// restore, the committable offset), checked step by step and against a brute-force model.
#include "keyroute_catch.hpp"

#include <keyroute/resequencer/offsets.hpp>

#include <cstdint>
#include <optional>
#include <random>
#include <set>
#include <vector>

using keyroute::detail::partition_offsets;
using seen = partition_offsets::seen;

TEST_CASE("partition_offsets: a refused offset comes again before any later one",
          "[resequencer][parts]") {
    partition_offsets p;
    REQUIRE(p.classify(0, 3) == seen::fresh);
    p.take(0, false);
    p.refuse(1);
    CHECK_THROWS_WITH(p.classify(2, 3),
                      keyroute_test::contains("partition 3 offset 2 pushed before offset 1"));
    CHECK(p.classify(0, 3) == seen::duplicate);  // below it: as before
    REQUIRE(p.classify(1, 3) == seen::fresh);    // the retry
    p.refuse(1);                                 // refused again
    CHECK_THROWS(p.classify(2, 3));
    REQUIRE(p.classify(1, 3) == seen::fresh);
    p.take(1, false);
    CHECK(p.classify(2, 3) == seen::fresh);  // taken: the contract was kept
    p.take(2, false);
    p.refuse(3);
    CHECK(p.skip_to(10) == 0);  // the reading jumped past it
    CHECK(p.classify(10, 3) == seen::fresh);
    CHECK(p.committable(std::nullopt) == 10);
}

TEST_CASE("partition_offsets: while a refused offset is owed", "[resequencer][parts]") {
    partition_offsets p;
    p.restore(10, {4});
    p.refuse(4);  // a re-read, refused
    CHECK(p.next() == 10);
    CHECK_NOTHROW(p.check_owed(4, 0));
    CHECK_THROWS_WITH(p.check_owed(5, 0),
                      keyroute_test::contains("offset 5 pushed before offset 4"));
    CHECK(p.committable(std::nullopt) == 4);
    REQUIRE(p.classify(4, 0) == seen::reread);  // the retry, still a re-read
    CHECK(p.take(4, true));
    CHECK(p.committable(std::nullopt) == 10);
    // An offset below the refused one, out of partition order, is taken and moves next().
    p.refuse(20);
    REQUIRE(p.classify(12, 0) == seen::fresh);
    p.take(12, false);
    CHECK(p.next() == 13);
    CHECK(p.classify(12, 0) == seen::duplicate);
    REQUIRE(p.classify(20, 0) == seen::fresh);
    p.take(20, false);
    CHECK(p.next() == 21);
}

TEST_CASE("partition_offsets: before the first offset nothing is committable",
          "[resequencer][offsets]") {
    partition_offsets p;
    CHECK(p.next() == -1);
    CHECK(p.classify(0, 0) == seen::fresh);
    CHECK_FALSE(p.committable(std::nullopt).has_value());
    CHECK_FALSE(p.committable(5).has_value());
}

TEST_CASE("partition_offsets: offsets below the highest taken are duplicates",
          "[resequencer][offsets]") {
    partition_offsets p;
    CHECK_FALSE(p.take(10, false));
    CHECK(p.next() == 11);
    CHECK(p.classify(10, 0) == seen::duplicate);
    CHECK(p.classify(3, 0) == seen::duplicate);
    CHECK(p.classify(11, 0) == seen::fresh);
    CHECK(p.committable(std::nullopt) == 11);
    CHECK(p.committable(7) == 7);  // a held event keeps the commit below it
    CHECK(p.committable(20) == 11);
}

TEST_CASE("partition_offsets: a restored checkpoint's held offsets are re-read once",
          "[resequencer][offsets]") {
    partition_offsets p;
    p.restore(100, {40, 70});
    CHECK(p.committable(std::nullopt) == 40);
    CHECK(p.classify(40, 0) == seen::reread);
    CHECK(p.classify(41, 0) == seen::duplicate);
    CHECK(p.classify(100, 0) == seen::fresh);
    CHECK(p.take(40, true));
    CHECK(p.classify(40, 0) == seen::duplicate);  // once
    CHECK_FALSE(p.take(40, true));
    CHECK(p.committable(std::nullopt) == 70);
    CHECK(p.take(70, true));
    CHECK(p.committable(std::nullopt) == 100);
    CHECK(p.rereads().empty());
    CHECK_FALSE(p.take(100, false));
    CHECK(p.next() == 101);
}

TEST_CASE("partition_offsets: re-reads the reading passed are no longer expected",
          "[resequencer][offsets]") {
    partition_offsets p;
    p.restore(100, {40, 70, 90});
    CHECK(p.skip_rereads_below(40) == 0);  // 40 itself may still come
    CHECK(p.committable(std::nullopt) == 40);
    CHECK(p.skip_rereads_below(71) == 2);  // retention deleted 40 and 70
    CHECK(p.committable(std::nullopt) == 90);
    CHECK(p.classify(90, 0) == seen::reread);
    CHECK(p.skip_rereads_below(1000) == 1);
    CHECK(p.rereads().empty());
    CHECK(p.committable(std::nullopt) == 100);
    CHECK(p.skip_rereads_below(1000) == 0);
    CHECK(p.next() == 100);  // only skip_to() moves the position

    partition_offsets q;
    CHECK(q.skip_to(5) == 0);
    CHECK(q.next() == -1);  // nothing taken: no position to move
    q.restore(10, {3, 8});
    CHECK(q.skip_to(6) == 1);
    CHECK(q.next() == 10);  // never backwards
    CHECK(q.skip_to(20) == 1);
    CHECK(q.next() == 20);
    CHECK(q.classify(15, 0) == seen::duplicate);
    CHECK(q.committable(std::nullopt) == 20);
}

TEST_CASE("partition_offsets: random reads agree with a set of offsets taken",
          "[resequencer][offsets]") {
    std::mt19937_64 rng(20261203);
    for (int round = 0; round < 200; ++round) {
        partition_offsets p;
        std::set<std::int64_t> taken;    // offsets taken (or delivered before the restore)
        std::set<std::int64_t> pending;  // re-reads expected
        const auto next = static_cast<std::int64_t>(rng() % 50);
        std::vector<std::int64_t> held;
        for (std::int64_t o = 0; o < next; ++o) {
            if (rng() % 4 == 0) {
                held.push_back(o);
                pending.insert(o);
            } else {
                taken.insert(o);
            }
        }
        if (next > 0) p.restore(next, held);
        std::int64_t high = next - 1;
        for (int step = 0; step < 200; ++step) {
            const auto o = static_cast<std::int64_t>(rng() % 80);
            const seen s = p.classify(o, 0);
            if (o > high) {
                REQUIRE(s == seen::fresh);
            } else if (pending.count(o) != 0) {
                REQUIRE(s == seen::reread);
            } else {
                REQUIRE(s == seen::duplicate);
                continue;
            }
            REQUIRE(p.take(o, s == seen::reread) == (pending.erase(o) != 0));
            taken.insert(o);
            high = std::max(high, o);
            REQUIRE(p.next() == high + 1);
            const auto c = p.committable(std::nullopt);
            REQUIRE(c.has_value());
            REQUIRE(*c == (pending.empty() ? high + 1 : *pending.begin()));
        }
    }
}
