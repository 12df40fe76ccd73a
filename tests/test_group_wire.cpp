// The group's own records (group_wire.hpp): origin headers, progress records and home
// checkpoints round-trip, and a foreign or truncated record is an error, never a wrong value.
#include "keyroute_catch.hpp"

#include <keyroute/kafka/group_wire.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kk = keyroute::kafka;
using keyroute_test::contains;

TEST_CASE("an origin header round-trips and rejects what is not one", "[group]") {
    const kk::source_position p{31, 9000000000LL, 1764000000000LL};
    CHECK(kk::decode_origin(kk::encode_origin(p)) == p);
    const kk::source_position untimed{0, 0, -1};
    CHECK(kk::decode_origin(kk::encode_origin(untimed)) == untimed);
    CHECK_THROWS_WITH(kk::decode_origin(""), contains("decode_origin"));
    CHECK_THROWS_WITH(kk::decode_origin("3"), contains("offset"));
    CHECK_THROWS_WITH(kk::decode_origin("3 4"), contains("timestamp"));
    CHECK_THROWS_WITH(kk::decode_origin("-1 4 0"), contains("partition"));
    CHECK_THROWS_WITH(kk::decode_origin("1 -4 0"), contains("offset"));
    CHECK_THROWS_WITH(kk::decode_origin("1 4 -2"), contains("timestamp"));
    CHECK_THROWS_WITH(kk::decode_origin("1 4 5 6"), contains("end"));
    CHECK_THROWS_WITH(kk::decode_origin("x 4 0"), contains("partition"));
}

TEST_CASE("a progress record round-trips and rejects what is not one", "[group]") {
    using st = kk::source_state;
    const std::vector<kk::source_progress> list{{0, 120, st::at_end, 1764831600123},
                                                {5, -1, st::reading, -1},
                                                {31, 7, st::blocked, 1764831500000}};
    CHECK(kk::decode_progress(kk::encode_progress(list)) == list);
    CHECK(kk::decode_progress(kk::encode_progress({})).empty());
    const std::string good = kk::encode_progress(list);
    CHECK_THROWS_WITH(kk::decode_progress(good.substr(0, good.size() - 4)), contains("end"));
    CHECK_THROWS_WITH(kk::decode_progress("keyroute-progress-2 1 0 5 3 -1 end"), contains("state"));
    CHECK_THROWS_WITH(kk::decode_progress("keyroute-progress-2 1 0 5 1 -2 end"),
                      contains("watermark"));
    CHECK_THROWS_WITH(kk::decode_progress("keyroute-progress-2 1 -3 5 0 -1 end"),
                      contains("partition"));
    // A member of an older release (no state, no watermark) is refused, not misread.
    CHECK_THROWS_WITH(kk::decode_progress("keyroute-progress-1 1 0 5 1 end"), contains("magic"));
    CHECK_THROWS_WITH(kk::decode_progress("something else"), contains("magic"));
    CHECK_THROWS_WITH(kk::decode_progress(good + " 7"), contains("end"));  // trailing data
}

TEST_CASE("progress records count by the position they state, not by when they arrive", "[group]") {
    using st = kk::source_state;
    kk::progress_known known;
    CHECK_FALSE(known.heard);
    // The new owner of a source, resumed at the committed offset 100 and read to 250.
    CHECK(known.take({3, 250, st::reading, 5000}));
    CHECK((known.next == 250 && known.watermark == 5000 && known.state == st::reading));
    // A late record of its earlier owner, which had read to 180 and its end: older, ignored,
    // though it arrives last. Taken as it came, it would say the source is at its end with a
    // watermark ahead of what the new owner still forwards.
    CHECK_FALSE(known.take({3, 180, st::at_end, 9000}));
    CHECK((known.next == 250 && known.watermark == 5000 && known.state == st::reading));
    // The same position stated twice: both hold, the greater watermark stands.
    CHECK(known.take({3, 250, st::at_end, 7000}));
    CHECK((known.watermark == 7000 && known.state == st::at_end));
    CHECK(known.take({3, 250, st::reading, -1}));
    CHECK((known.watermark == 7000 && known.state == st::reading));
    // Further on, the record's own watermark, lower or not.
    CHECK(known.take({3, 251, st::reading, 6000}));
    CHECK((known.next == 251 && known.watermark == 6000));
    // Nothing read yet (next -1) is the first thing heard, then behind everything.
    kk::progress_known fresh;
    CHECK(fresh.take({0, -1, st::reading, -1}));
    CHECK(fresh.heard);
    CHECK(fresh.take({0, 0, st::at_end, 10}));
    CHECK_FALSE(fresh.take({0, -1, st::reading, -1}));
}

TEST_CASE("a home checkpoint round-trips and rejects what is not one", "[group]") {
    kk::home_checkpoint cp;
    cp.home = 17;
    cp.source_offset = 4000;
    cp.repartition_offset = 12;
    cp.application = std::string("length\0 42\n", 11);
    cp.state.topic = "events";
    cp.state.partitions = 32;
    cp.state.state.partitions.push_back({17, 4001, {3999}});
    const auto back = kk::decode_home_checkpoint(kk::encode_home_checkpoint(cp));
    CHECK(back.home == 17);
    CHECK(back.source_offset == 4000);
    CHECK(back.repartition_offset == 12);
    CHECK(back.application == cp.application);
    CHECK(back.state.topic == "events");
    CHECK(back.state.partitions == 32);
    REQUIRE(back.state.state.partitions.size() == 1);
    CHECK(back.state.state.partitions[0].held_offsets == std::vector<std::int64_t>{3999});

    const std::string good = kk::encode_home_checkpoint(cp);
    const auto nl = good.find('\n');
    CHECK_THROWS_WITH(kk::decode_home_checkpoint(good.substr(0, nl)), contains("state"));
    CHECK_THROWS_WITH(kk::decode_home_checkpoint("keyroute-home-checkpoint-1 x"), contains("home"));
    CHECK_THROWS_WITH(kk::decode_home_checkpoint(good.substr(nl + 1)), contains("magic"));
    CHECK_THROWS_AS(kk::decode_home_checkpoint(good.substr(0, good.size() - 5)),
                    std::runtime_error);
    std::string extra = good;
    extra.insert(nl, " 9");  // a token after the application's bytes
    CHECK_THROWS_WITH(kk::decode_home_checkpoint(extra), contains("application"));
    std::string below = good;
    below.replace(below.find(" 4000 "), 6, " -7 ");
    CHECK_THROWS_WITH(kk::decode_home_checkpoint(below), contains("offset"));
}
