// Built with -fno-exceptions (test_no_exceptions): the umbrella header compiles and every scheme,
// the salting router, the stamps and the resequencer work without exceptions. A plain program,
// since Catch2 needs exceptions: it exits non-zero on the first failed check.
#include <keyroute/keyroute.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "no_exceptions_check.hpp"

namespace {

void check(bool ok, const char* what) { no_exceptions_test::check(ok, what, "no_exceptions"); }

template <class P>
void routes(const P& p, std::uint32_t n) {
    for (const std::string_view key :
         {std::string_view(""), std::string_view("user-42"), std::string_view("a\0b", 3)}) {
        check(p.route(key) < n, "route in range");
        check(p.route(key) == p.route(key), "route deterministic");
    }
}

}  // namespace

int main() {
    constexpr std::uint32_t n = 16;
    routes(keyroute::hash_partitioner<>(n), n);
    routes(keyroute::kafka_partitioner(n), n);
    routes(keyroute::rdkafka_consistent_partitioner(n), n);
    routes(keyroute::rdkafka_fnv1a_partitioner(n), n);
    routes(keyroute::pulsar_java_string_partitioner(n), n);
    routes(keyroute::pulsar_murmur3_partitioner(n), n);
    routes(keyroute::jump_partitioner<>(n), n);
    routes(keyroute::rendezvous_partitioner<>(n), n);
    routes(keyroute::maglev_partitioner<>(n, 1031), n);
    routes(keyroute::key_group_partitioner<>(n, 128), n);
    check(keyroute::kafka_partitioner(n).route("user-42") ==
              (keyroute::murmur2{}("user-42") & 0x7fffffffU) % n,
          "kafka formula");

    // The router: a hot key spreads, a cold key stays home, totals are exact.
    keyroute::salting_config config;
    config.partitions = n;
    config.threshold = 50;
    config.seed = 3;
    config.producer_id = 9;
    keyroute::salting_router<keyroute::kafka_partitioner> router(config);
    const auto t = std::chrono::system_clock::time_point(std::chrono::seconds(1000));
    std::uint64_t salted = 0;
    std::vector<keyroute::stamp> stamps;
    for (int i = 0; i < 500; ++i) {
        const auto d = router.decide("hot", t);
        check(d.partition < n, "router in range");
        salted += d.salted ? 1U : 0U;
        if (d.stamp) stamps.push_back(d.stamp);
        const auto cold = router.decide(std::to_string(i), t);  // each key once: cold
        check(cold.partition == cold.home, "cold key home");
    }
    check(salted > 0, "hot key spread");
    check(router.stats().routed == 1000, "router totals");

    // Stamps round-trip; malformed bytes are refused without exceptions.
    check(!stamps.empty(), "hot key stamped");
    const auto wire = keyroute::encode_stamp(stamps.front());
    const auto back = keyroute::try_decode_stamp(wire.view());
    check(back.has_value() && *back == stamps.front(), "stamp round trip");
    keyroute::stamp_error error = keyroute::stamp_error::none;
    check(!keyroute::try_decode_stamp(std::string_view("\x07", 1), &error), "bad stamp refused");
    check(error == keyroute::stamp_error::unknown_version, "bad stamp reason");

    // The resequencer restores an episode's order.
    std::vector<int> out;
    keyroute::resequencer<int> reseq(
        keyroute::resequencer_config{},
        [&](keyroute::delivery<int>&& d) { out.push_back(d.event); },
        [](const keyroute::gap_report&) {});
    const keyroute::stamp s2{1, 0, 1, 2, true};
    const keyroute::stamp s0{1, 0, 1, 0, true};
    const keyroute::stamp s1{1, 0, 1, 1, true};
    check(reseq.push("k", s2, 2, keyroute::origin{1, 0}, std::chrono::milliseconds(0)) ==
              keyroute::push_result::accepted,
          "push held");
    check(reseq.push("k", s0, 0, keyroute::origin{0, 0}, std::chrono::milliseconds(0)) ==
              keyroute::push_result::accepted,
          "push first");
    check(reseq.push("k", s1, 1, keyroute::origin{2, 0}, std::chrono::milliseconds(0)) ==
              keyroute::push_result::accepted,
          "push second");
    check(out == std::vector<int>{0, 1, 2}, "resequenced order");

    std::printf("no_exceptions: %d checks passed\n", no_exceptions_test::checks);
    return 0;
}
