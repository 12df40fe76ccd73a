// Migration reports: totals and per-partition flows against a naive recount, weights, id sets,
// the generated sample, bad weights, and the text and JSON writers.
#include "keyroute_catch.hpp"

#include <keyroute/jump.hpp>
#include <keyroute/migration.hpp>
#include <keyroute/partitioner.hpp>
#include <keyroute/rendezvous.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct naive_flow {
    std::uint64_t old_keys = 0, new_keys = 0, in = 0, out = 0;
    double old_traffic = 0, new_traffic = 0, traffic_in = 0, traffic_out = 0;
};

template <class Old, class New>
void check_against_naive(const keyroute::migration_report& r, const Old& before, const New& after,
                         const std::vector<std::string>& keys, const std::vector<double>& weights) {
    std::map<std::uint32_t, naive_flow> flows;
    std::uint64_t moved = 0;
    double traffic = 0;
    double moved_traffic = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const double w = weights.empty() ? 1.0 : weights[i];
        const auto from = before.route(keys[i]);
        const auto to = after.route(keys[i]);
        traffic += w;
        flows[from].old_keys++;
        flows[from].old_traffic += w;
        flows[to].new_keys++;
        flows[to].new_traffic += w;
        if (from != to) {
            ++moved;
            moved_traffic += w;
            flows[from].out++;
            flows[from].traffic_out += w;
            flows[to].in++;
            flows[to].traffic_in += w;
        }
    }
    REQUIRE(r.keys == keys.size());
    REQUIRE(r.moved_keys == moved);
    REQUIRE(r.traffic == Approx(traffic));
    REQUIRE(r.moved_traffic == Approx(moved_traffic));
    for (const auto& f : r.partitions) {
        const naive_flow expected = flows.count(f.partition) ? flows[f.partition] : naive_flow{};
        INFO("partition " << f.partition);
        CHECK(f.old_keys == expected.old_keys);
        CHECK(f.new_keys == expected.new_keys);
        CHECK(f.keys_in == expected.in);
        CHECK(f.keys_out == expected.out);
        CHECK(f.old_traffic == Approx(expected.old_traffic));
        CHECK(f.new_traffic == Approx(expected.new_traffic));
        CHECK(f.traffic_in == Approx(expected.traffic_in));
        CHECK(f.traffic_out == Approx(expected.traffic_out));
        flows.erase(f.partition);
    }
    CHECK(flows.empty());  // every partition a key went to is in the report
}

auto sample_keys(std::size_t count) -> std::vector<std::string> {
    std::vector<std::string> keys;
    for (std::size_t i = 0; i < count; ++i) keys.push_back("order-" + std::to_string(i * 7919));
    return keys;
}

}  // namespace

TEST_CASE("the report matches a naive recount, unweighted and weighted", "[migration][resize]") {
    const auto keys = sample_keys(20000);
    std::mt19937_64 rng(1);
    std::vector<double> weights(keys.size());
    for (auto& w : weights) w = static_cast<double>(rng() % 1000) / 10.0;  // zeros allowed

    const keyroute::kafka_partitioner k12(12), k13(13);
    const auto r = keyroute::compare_partitioners(k12, k13, keys);
    CHECK_FALSE(r.weighted);
    check_against_naive(r, k12, k13, keys, {});
    REQUIRE(r.partitions.size() == 13);
    CHECK(r.partitions.back().in_new);
    CHECK_FALSE(r.partitions.back().in_old);
    CHECK(r.traffic == static_cast<double>(keys.size()));

    const auto w = keyroute::compare_partitioners(k12, k13, keys, weights);
    CHECK(w.weighted);
    check_against_naive(w, k12, k13, keys, weights);

    const keyroute::jump_partitioner<> j12(12), j13(13);
    const std::vector<std::string_view> views(keys.begin(), keys.end());
    check_against_naive(keyroute::compare_partitioners(j12, j13, views, weights), j12, j13, keys,
                        weights);
}

TEST_CASE("flows balance: inflow = outflow = moved, old and new loads sum to the total",
          "[migration]") {
    const keyroute::jump_partitioner<> before(10), after(17);
    const auto r =
        keyroute::compare_partitioners(before, after, keyroute::generated_keys{100000, 7});
    std::uint64_t in = 0, out = 0, old_keys = 0, new_keys = 0;
    for (const auto& f : r.partitions) {
        in += f.keys_in;
        out += f.keys_out;
        old_keys += f.old_keys;
        new_keys += f.new_keys;
        // Jump only ever moves keys to the new partitions, never between old ones.
        if (f.partition < 10) CHECK(f.keys_in == 0);
        if (f.partition >= 10) CHECK(f.keys_out == 0);
    }
    CHECK(in == r.moved_keys);
    CHECK(out == r.moved_keys);
    CHECK(old_keys == r.keys);
    CHECK(new_keys == r.keys);
    CHECK(r.keys == 100000);
    // 10 -> 17 moves 7/17 of the keys.
    CHECK(r.moved_key_share() == Approx(7.0 / 17).epsilon(0.05));
    CHECK(r.moved_traffic_share() == r.moved_key_share());
}

TEST_CASE("id sets: the removed and the added id are reported, with their flows", "[migration]") {
    const keyroute::rendezvous_partitioner<> before(std::vector<std::uint32_t>{100, 200, 300});
    const keyroute::rendezvous_partitioner<> after(std::vector<std::uint32_t>{100, 300, 400});
    const auto r = keyroute::compare_partitioners(before, after, keyroute::generated_keys{30000});
    REQUIRE(r.partitions.size() == 4);
    const auto& removed = r.partitions[1];
    const auto& added = r.partitions[3];
    CHECK(removed.partition == 200);
    CHECK((removed.in_old && !removed.in_new));
    CHECK(removed.new_keys == 0);
    CHECK(removed.keys_out == removed.old_keys);
    CHECK(added.partition == 400);
    CHECK((added.in_new && !added.in_old));
    CHECK(added.keys_in == added.new_keys);
    CHECK(r.partitions[0].keys_in > 0);
    // The flows against each key's own move, on an explicit key list: 100 and 300 lose keys
    // only to 400 and receive keys only from 200 (nothing moves between surviving ids).
    std::vector<std::string> keys;
    for (int i = 0; i < 20000; ++i) keys.push_back("key-" + std::to_string(i));
    const auto k = keyroute::compare_partitioners(before, after, keys);
    std::map<std::uint32_t, std::uint64_t> in;
    std::map<std::uint32_t, std::uint64_t> out;
    std::uint64_t between_survivors = 0;
    for (const auto& key : keys) {
        const std::uint32_t from = before.route(key);
        const std::uint32_t to = after.route(key);
        if (from == to) continue;
        ++out[from];
        ++in[to];
        if (from != 200 && to != 400) ++between_survivors;
    }
    CHECK(between_survivors == 0U);
    REQUIRE(k.partitions.size() == 4);
    for (const auto& f : k.partitions) {
        CAPTURE(f.partition);
        CHECK(f.keys_in == in[f.partition]);
        CHECK(f.keys_out == out[f.partition]);
    }
    // Large ids take the sparse path and are still listed.
    const keyroute::rendezvous_partitioner<> big(std::vector<std::uint32_t>{5, 4000000000U});
    const auto s = keyroute::compare_partitioners(big, big, keyroute::generated_keys{1000});
    REQUIRE(s.partitions.size() == 2);
    CHECK(s.partitions[1].partition == 4000000000U);
    CHECK(s.moved_keys == 0);
}

TEST_CASE("the generated sample is deterministic and uses its seed", "[migration]") {
    const keyroute::kafka_partitioner a(12), b(13);
    const auto r1 = keyroute::compare_partitioners(a, b, keyroute::generated_keys{5000, 1});
    const auto r2 = keyroute::compare_partitioners(a, b, keyroute::generated_keys{5000, 1});
    const auto r3 = keyroute::compare_partitioners(a, b, keyroute::generated_keys{5000, 2});
    CHECK(r1.moved_keys == r2.moved_keys);
    CHECK(r1.partitions[3].old_keys == r2.partitions[3].old_keys);
    CHECK(r1.partitions[3].old_keys != r3.partitions[3].old_keys);
    CHECK(keyroute::compare_partitioners(a, b).keys == 1000000);
    CHECK(keyroute::compare_partitioners(a, b, keyroute::generated_keys{0}).moved_key_share() == 0);
}

TEST_CASE("bad weights are rejected, naming the index and value", "[migration][config]") {
    const keyroute::jump_partitioner<> a(3), b(4);
    const std::vector<std::string> keys = {"a", "b", "c"};
    REQUIRE_THROWS_WITH(keyroute::compare_partitioners(a, b, keys, {1.0, 2.0}),
                        keyroute_test::contains("got 2 weights for 3 keys"));
    REQUIRE_THROWS_WITH(keyroute::compare_partitioners(a, b, keys, {1.0, -2.0, 1.0}),
                        keyroute_test::contains("weights[1] = -2"));
    REQUIRE_THROWS_AS(keyroute::compare_partitioners(a, b, keys, {1.0, 1.0, std::nan("")}),
                      std::invalid_argument);
    REQUIRE_THROWS_AS(keyroute::compare_partitioners(
                          a, b, keys, {std::numeric_limits<double>::infinity(), 1.0, 1.0}),
                      std::invalid_argument);
    // Each weight finite, their sum not: the totals (and the JSON) would hold inf and NaN.
    const double big = std::numeric_limits<double>::max();
    REQUIRE_THROWS_WITH(keyroute::compare_partitioners(a, b, keys, {big, big, 1.0}),
                        keyroute_test::contains("add up to more than a double holds"));
    const auto r = keyroute::compare_partitioners(a, b, keys, {big / 4, big / 4, big / 4});
    CHECK(std::isfinite(r.traffic));
    CHECK((r.moved_traffic_share() >= 0 && r.moved_traffic_share() <= 1));
}

TEST_CASE("keys read once and integer weights give the same report", "[migration]") {
    // Keys streamed from a file: a range that can be read only once.
    const keyroute::jump_partitioner<> a(7), b(8);
    std::vector<std::string> keys;
    std::vector<std::uint64_t> counts;
    std::string text;
    for (std::uint64_t i = 0; i < 2000; ++i) {
        keys.push_back("tenant-" + std::to_string(i * 7919));
        counts.push_back(i % 13);
        text += keys.back() + "\n";
    }
    const std::vector<double> weights(counts.begin(), counts.end());
    const auto expected = keyroute::compare_partitioners(a, b, keys, weights);
    check_against_naive(expected, a, b, keys, weights);
    REQUIRE(expected.moved_keys > 0);

    struct once {
        std::istringstream* in;
        auto begin() const { return std::istream_iterator<std::string>(*in); }
        auto end() const { return std::istream_iterator<std::string>(); }
    };
    std::istringstream in(text);
    const auto streamed = keyroute::compare_partitioners(a, b, once{&in}, counts);
    CHECK(streamed.keys == expected.keys);
    CHECK(streamed.moved_keys == expected.moved_keys);
    CHECK(streamed.traffic == expected.traffic);
    CHECK(streamed.moved_traffic == expected.moved_traffic);
    std::istringstream unweighted(text);
    CHECK(keyroute::compare_partitioners(a, b, once{&unweighted}).keys == 2000);
    std::istringstream short_weights(text);
    REQUIRE_THROWS_WITH(
        keyroute::compare_partitioners(a, b, once{&short_weights}, std::vector<int>(1999, 1)),
        keyroute_test::contains("got 1999 weights for 2000 keys"));
    REQUIRE_THROWS_WITH(keyroute::compare_partitioners(a, b, keys, std::vector<int>{1, -1, 1}),
                        keyroute_test::contains("weights[1] = -1"));
}

TEST_CASE("partitions past the listing limit are still known to be in their side", "[migration]") {
    // The new side has 2^21 partitions, more than the report lists: an old partition is in both
    // sides all the same, and the text calls none of them removed.
    const keyroute::kafka_partitioner before(1000);
    const keyroute::kafka_partitioner after(std::uint32_t{1} << 21U);
    const auto r = keyroute::compare_partitioners(before, after, keyroute::generated_keys{20000});
    REQUIRE_FALSE(r.partitions.empty());
    for (const auto& f : r.partitions) {
        CHECK(f.in_new);
        CHECK(f.in_old == (f.partition < 1000));
    }
    std::ostringstream text;
    r.write_text(text, r.partitions.size());
    CHECK(text.str().find("(removed)") == std::string::npos);
    CHECK(text.str().find("(added)") != std::string::npos);  // new ids keys went to
}

namespace {
/// Breaks the partitioner contract on purpose: 2 partitions, but "stray" keys go to id 7.
struct stray_partitioner {
    [[nodiscard]] auto route(std::string_view key) const noexcept -> std::uint32_t {
        return key.substr(0, 5) == "stray" ? 7U : static_cast<std::uint32_t>(key.size() % 2);
    }
    [[nodiscard]] auto partitions() const noexcept -> std::uint32_t { return 2; }
};
}  // namespace

TEST_CASE("an id a partitioner routes to outside its own gets a row of its own", "[migration]") {
    // Such an id must not be written past the end of the report's dense array (ASan: heap
    // buffer overflow), and it needs a row.
    const std::vector<std::string> keys = {"a", "bb", "stray-1", "stray-22", "cc"};
    const auto r =
        keyroute::compare_partitioners(keyroute::jump_partitioner(2), stray_partitioner{}, keys);
    REQUIRE(r.keys == 5);
    const auto row = std::find_if(r.partitions.begin(), r.partitions.end(),
                                  [](const auto& f) { return f.partition == 7; });
    REQUIRE(row != r.partitions.end());
    CHECK(row->new_keys == 2);
    CHECK(row->old_keys == 0);
    CHECK_FALSE(row->in_old);
    CHECK_FALSE(row->in_new);
    std::uint64_t new_keys = 0;
    for (const auto& f : r.partitions) new_keys += f.new_keys;
    CHECK(new_keys == 5);
    // The text names it for what it is (not "(not enumerated)", a listing limit's word).
    std::ostringstream text;
    r.write_text(text);
    CHECK_THAT(text.str(), keyroute_test::contains("(outside both)"));
    CHECK_THAT(text.str(), !keyroute_test::contains("not enumerated"));
}

namespace {
/// A user's id-set partitioner whose ids() returns a copy, which the has_ids contract allows.
struct by_value_ids {
    std::vector<std::uint32_t> m_ids{3, 10, 4};
    [[nodiscard]] auto route(std::string_view key) const noexcept -> std::uint32_t {
        return m_ids[key.size() % m_ids.size()];
    }
    [[nodiscard]] auto partitions() const noexcept -> std::uint32_t { return 3; }
    [[nodiscard]] auto ids() const -> std::vector<std::uint32_t> { return m_ids; }
};
}  // namespace

TEST_CASE("an ids() that returns by value is called once per use", "[migration]") {
    // The largest id must be searched within one copy: from begin() of one to end() of another
    // is a heap-buffer-overflow under ASan.
    const std::vector<std::string> keys = {"a", "bb", "ccc", "dddd", "eeeee", "ffffff"};
    const auto r = keyroute::compare_partitioners(by_value_ids{}, by_value_ids{}, keys);
    CHECK(r.moved_keys == 0);
    REQUIRE(r.partitions.size() == 3);
    CHECK(r.partitions[0].partition == 3);
    CHECK(r.partitions[1].partition == 4);
    CHECK(r.partitions[2].partition == 10);
    for (const auto& f : r.partitions) {
        CHECK(f.in_old);
        CHECK(f.old_keys == 2);
    }
}

TEST_CASE("sparse ids are counted in a map, not an array up to the largest", "[migration]") {
    // Two ids {0, 2^20 - 1} would take a 72 MiB array; a dense run of ids keeps its array.
    CHECK(keyroute::detail::flow_table((std::uint64_t{1} << 20U) - 1, 4).dense_ids() == 0);
    CHECK(keyroute::detail::flow_table(1023, 4).dense_ids() == 1024);
    CHECK(keyroute::detail::flow_table(99999, 20000).dense_ids() == 100000);
    // Dense however many ids (2^23 listed ids took a hash map of 1.4 GB, where the array is 576
    // MiB); 2^20 was the limit.
    CHECK(keyroute::detail::flow_table(std::uint64_t{1} << 20U, std::uint64_t{1} << 17U)
              .dense_ids() == (std::size_t{1} << 20U) + 1U);
    const keyroute::rendezvous_partitioner<> before(std::vector<std::uint32_t>{0, 1048575});
    const keyroute::rendezvous_partitioner<> after(std::vector<std::uint32_t>{0, 1048574});
    const auto r = keyroute::compare_partitioners(before, after, keyroute::generated_keys{1000});
    REQUIRE(r.partitions.size() == 3);
    CHECK(r.partitions[2].partition == 1048575);
    CHECK(r.partitions[2].in_old);
    CHECK_FALSE(r.partitions[2].in_new);
}

TEST_CASE("the text and JSON writers print the figures", "[migration][output]") {
    const keyroute::jump_partitioner<> a(2), b(3);
    const std::vector<std::string> keys = {"a", "b", "c", "d", "e", "f", "g", "h"};
    auto r = keyroute::compare_partitioners(a, b, keys, {1, 1, 1, 1, 1, 1, 1, 1});
    r.old_label = "jump \"n=2\"";
    r.new_label = "jump n=3";
    std::ostringstream text;
    r.write_text(text, 2);
    CHECK_THAT(text.str(), keyroute_test::contains("migration: jump \"n=2\" -> jump n=3"));
    CHECK_THAT(text.str(), keyroute_test::contains("sample: 8 keys, weighted"));
    CHECK_THAT(text.str(),
               keyroute_test::contains("moved: " + std::to_string(r.moved_keys) + " keys"));
    CHECK_THAT(text.str(), keyroute_test::contains("... 1 more partitions"));
    std::ostringstream json;
    r.write_json(json);
    const std::string j = json.str();
    CHECK_THAT(j, keyroute_test::contains(
                      "{\"old\":\"jump \\\"n=2\\\"\",\"new\":\"jump n=3\",\"keys\":8,"));
    CHECK_THAT(j, keyroute_test::contains("\"moved_keys\":" + std::to_string(r.moved_keys) + ","));
    CHECK_THAT(j, keyroute_test::contains("{\"id\":2,\"in_old\":false,\"in_new\":true,"));
    CHECK(j.back() == '\n');
    CHECK(std::count(j.begin(), j.end(), '{') == 4);
    CHECK(std::count(j.begin(), j.end(), '{') == std::count(j.begin(), j.end(), '}'));
}

TEST_CASE("the text's percentages stay finite when the whole traffic is tiny",
          "[migration][output]") {
    // Weights are any finite values >= 0; a text scaled by 100 / traffic, which is infinite
    // below ~1e-306 traffic, would print inf and nan.
    const keyroute::jump_partitioner<> a(2), b(3);
    const std::vector<std::string> keys = {"a", "b", "c", "d", "e", "f", "g", "h"};
    for (const double w : {1e-308, std::numeric_limits<double>::denorm_min()}) {
        CAPTURE(w);
        const auto r = keyroute::compare_partitioners(a, b, keys, std::vector<double>(8, w));
        std::ostringstream text;
        r.write_text(text);
        CHECK_THAT(text.str(), !keyroute_test::contains("inf"));
        CHECK_THAT(text.str(), !keyroute_test::contains("nan"));
        CHECK_THAT(text.str(), keyroute_test::contains("% of traffic"));
        // Each partition's share of the old traffic, in percent, adds up to 100.
        double old_percent = 0;
        for (const auto& f : r.partitions) old_percent += 100 * (f.old_traffic / r.traffic);
        CHECK(std::abs(old_percent - 100.0) < 1e-9);
    }
}
