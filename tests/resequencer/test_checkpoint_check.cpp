// detail::check_checkpoint: every fault restore() relies on not finding is refused, named; a
// checkpoint that checkpoint() could write passes.
#include "keyroute_catch.hpp"

#include <keyroute/resequencer/checkpoint.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using keyroute::resequencer_checkpoint;
using keyroute::detail::check_checkpoint;

namespace {

auto valid() -> resequencer_checkpoint {
    resequencer_checkpoint cp;
    cp.partitions.push_back({0, 10, {2, 7}});
    cp.partitions.push_back({1, 0, {}});
    resequencer_checkpoint::episode_state e;
    e.producer = 1;
    e.lane = 2;
    e.episode = 3;
    e.key = "k";
    e.next_sequence = 20;
    e.delivered_ahead = {22, 25};
    e.given_up = {{4, 6}, {9, 9}};
    e.forgotten_below = 4;
    cp.episodes.push_back(e);
    e.episode = 4;  // another episode of the same lane, finished
    e.next_sequence = std::numeric_limits<std::uint64_t>::max();
    e.delivered_ahead = {std::numeric_limits<std::uint64_t>::max()};
    cp.episodes.push_back(e);
    return cp;
}

auto fault(const std::function<void(resequencer_checkpoint&)>& change) -> std::string {
    resequencer_checkpoint cp = valid();
    change(cp);
    try {
        check_checkpoint(cp);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "accepted";
}

}  // namespace

TEST_CASE("check_checkpoint: a checkpoint checkpoint() could write passes",
          "[resequencer][checkpoint]") {
    CHECK_NOTHROW(check_checkpoint(valid()));
    CHECK_NOTHROW(check_checkpoint(resequencer_checkpoint{}));
}

TEST_CASE("check_checkpoint: each fault is refused and named", "[resequencer][checkpoint]") {
    const std::string prefix = "keyroute resequencer::restore: corrupt checkpoint: ";
    CHECK(fault([](auto& cp) { cp.partitions.push_back(cp.partitions[0]); }) ==
          prefix + "partition 0 is listed twice");
    CHECK(fault([](auto& cp) { cp.partitions[1].next_offset = -1; }) ==
          prefix + "partition 1 has next_offset -1");
    CHECK(fault([](auto& cp) { cp.partitions[0].held_offsets.push_back(10); }) ==
          prefix + "partition 0 holds offset 10, not in [0, next_offset 10)");
    CHECK(fault([](auto& cp) { cp.partitions[0].held_offsets.push_back(-3); }) ==
          prefix + "partition 0 holds offset -3, not in [0, next_offset 10)");
    CHECK(fault([](auto& cp) { cp.episodes.push_back(cp.episodes[0]); }) ==
          prefix + "episode (producer 1, lane 2, episode 3) is listed twice");
    CHECK(fault([](auto& cp) { cp.episodes[0].delivered_ahead.push_back(20); }) ==
          prefix +
              "episode (producer 1, lane 2, episode 3) has sequence 20 delivered ahead of "
              "next_sequence 20");
    CHECK(fault([](auto& cp) { cp.episodes[0].forgotten_below = 21; }) ==
          prefix +
              "episode (producer 1, lane 2, episode 3) has forgotten_below 21 above "
              "next_sequence 20");
    CHECK(fault([](auto& cp) { cp.episodes[0].given_up.emplace_back(12, 11); }) ==
          prefix + "episode (producer 1, lane 2, episode 3) gave up the range [12, 11]");
}
