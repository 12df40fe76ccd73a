// Links link_unit_a.cpp and link_unit_b.cpp, which both include <keyroute/keyroute.hpp>.
#include "keyroute_catch.hpp"

#include <keyroute/keyroute.hpp>

auto route_in_unit_a(std::string_view key) -> std::uint32_t;
auto route_in_unit_b(std::string_view key) -> std::uint32_t;

TEST_CASE("two translation units that include keyroute link and agree", "[packaging]") {
    for (const char* k : {"a", "tenant-7", ""}) {
        CHECK(route_in_unit_a(k) == route_in_unit_b(k));
        CHECK(route_in_unit_a(k) == keyroute::kafka_partitioner(16).route(k));
    }
}
