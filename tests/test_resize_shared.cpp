// One instance of each resize partitioner shared by two threads routes exactly as one thread does
// (route() is const and touches no shared mutable state; TSan builds check the claim).
#include "keyroute_catch.hpp"

#include <keyroute/jump.hpp>
#include <keyroute/key_group.hpp>
#include <keyroute/maglev.hpp>
#include <keyroute/rendezvous.hpp>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace {

template <class P>
void check_shared(const P& p) {
    std::vector<std::string> keys;
    for (int i = 0; i < 20000; ++i) keys.push_back("key-" + std::to_string(i));
    std::vector<std::uint32_t> expected;
    for (const auto& k : keys) expected.push_back(p.route(k));
    std::vector<std::uint32_t> a(keys.size());
    std::vector<std::uint32_t> b(keys.size());
    std::thread t1([&] {
        for (std::size_t i = 0; i < keys.size(); ++i) a[i] = p.route(keys[i]);
    });
    std::thread t2([&] {
        for (std::size_t i = keys.size(); i-- > 0;) b[i] = p.route(keys[i]);
    });
    t1.join();
    t2.join();
    CHECK(a == expected);
    CHECK(b == expected);
}

}  // namespace

TEST_CASE("resize partitioners can be shared between threads", "[resize][threads]") {
    check_shared(keyroute::jump_partitioner<>(37));
    check_shared(keyroute::rendezvous_partitioner<>(37));
    check_shared(
        keyroute::rendezvous_partitioner<>(std::vector<std::uint32_t>{3, 9, 27}, {1.0, 2.0, 4.0}));
    check_shared(keyroute::maglev_partitioner<>(37));
    check_shared(keyroute::key_group_partitioner<>(37));
}
