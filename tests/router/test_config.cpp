// detail::checked_config and checked_base: each bad field refused by name; detail::router_sizing:
// the automatic table and lanes keep a router within its budget up to 1024 partitions.
#include "keyroute_catch.hpp"

#include <keyroute/partitioner.hpp>
#include <keyroute/router/config.hpp>
#include <keyroute/router/sizing.hpp>

#include <chrono>
#include <cstdint>
#include <stdexcept>

namespace {

using keyroute::salting_config;
using keyroute::detail::checked_config;
using millis_clock = std::chrono::system_clock;

// A clock that counts whole seconds in 32 bits.
struct narrow_seconds_clock {
    using rep = std::int32_t;
    using period = std::ratio<1>;
    using duration = std::chrono::duration<rep, period>;
    using time_point = std::chrono::time_point<narrow_seconds_clock>;
    [[maybe_unused]] static constexpr bool is_steady = false;
};

auto valid() -> salting_config {
    salting_config c;
    c.partitions = 16;
    return c;
}

}  // namespace

TEST_CASE("checked_config: a valid configuration comes back unchanged; each bad field is named",
          "[router][config]") {
    const auto checked = checked_config<millis_clock>(valid());
    CHECK(checked.partitions == 16U);
    CHECK(checked.window == std::chrono::minutes(1));
    const auto refused = [](auto change, const char* field) {
        auto bad = valid();
        change(bad);
        REQUIRE_THROWS_AS(checked_config<millis_clock>(bad), std::invalid_argument);
        REQUIRE_THROWS_WITH(checked_config<millis_clock>(bad),
                            keyroute_test::contains(std::string("salting_config.") + field));
    };
    refused([](salting_config& c) { c.partitions = 0; }, "partitions");
    refused([](salting_config& c) { c.partitions = (1U << 20U) + 1U; }, "partitions");
    refused([](salting_config& c) { c.window = std::chrono::milliseconds(0); }, "window");
    refused([](salting_config& c) { c.window = std::chrono::hours(24 * 367); }, "window");
    refused([](salting_config& c) { c.auto_fraction = 1.5; }, "auto_fraction");
    refused([](salting_config& c) { c.min_threshold = 0; }, "min_threshold");
    refused([](salting_config& c) { c.run_length = 65537; }, "run_length");
    refused([](salting_config& c) { c.max_hot_keys = 4097; }, "max_hot_keys");
    refused([](salting_config& c) { c.lanes = 257; }, "lanes");
    refused([](salting_config& c) { c.threshold = std::uint64_t{1} << 32U; }, "threshold");
}

TEST_CASE("checked_config: the window is a whole number of the clock's ticks and fits them",
          "[router][config]") {
    auto c = valid();
    c.window = std::chrono::milliseconds(2500);
    REQUIRE_THROWS_WITH(checked_config<narrow_seconds_clock>(c),
                        keyroute_test::contains("whole number"));
    c.window = std::chrono::seconds(3);
    CHECK(checked_config<narrow_seconds_clock>(c).window == std::chrono::seconds(3));
    CHECK(keyroute::detail::window_ticks<narrow_seconds_clock>(c.window) == 3);
    // A year of seconds fits 32 bits; a year of milliseconds would not (the tick count is what
    // must fit, not the milliseconds).
    c.window = std::chrono::hours(24 * 365);
    CHECK_NOTHROW(checked_config<narrow_seconds_clock>(c));
}

TEST_CASE("checked_base: the base partitioner's count must match", "[router][config]") {
    const auto c = valid();
    CHECK(keyroute::detail::checked_base(keyroute::hash_partitioner<>(16), c).partitions() == 16U);
    REQUIRE_THROWS_WITH(keyroute::detail::checked_base(keyroute::hash_partitioner<>(17), c),
                        keyroute_test::contains("differs"));
}

TEST_CASE("router_sizing: automatic sizes keep the state within the budget up to 1024 partitions",
          "[router][config]") {
    using sizing = keyroute::detail::router_sizing<1024>;
    for (const std::uint64_t n : {1U, 4U, 100U, 311U, 512U, 663U, 1000U, 1024U}) {
        const std::uint32_t keys = sizing::automatic_hot_keys(n);
        INFO("partitions " << n << ", keys " << keys);
        CHECK(keys >= 128U);
        CHECK(sizing::state_bytes(n, keys, 2) <= sizing::budget);
        CHECK(sizing::state_bytes(n, 0, 2) == sizing::state_bytes(n, keys, 2));
        const std::uint32_t lanes = sizing::automatic_lanes(n, 0, 64);
        CHECK(lanes >= 2U);
        CHECK(lanes <= 16U);
        CHECK((lanes == 2U || sizing::state_bytes(n, 0, lanes) <= sizing::budget));
    }
    // Above 1024 partitions the table follows the partitions, up to 4096 keys.
    CHECK(sizing::automatic_hot_keys(2048) == 2048U);
    CHECK(sizing::automatic_hot_keys(100000) == 4096U);
    // Slots: a power of two of at least twice the keys; refused sizes read as SIZE_MAX.
    CHECK(sizing::slot_count(100, 100) == 256U);
    CHECK(sizing::slot_count(100, 1) == 16U);
    CHECK(sizing::state_bytes(0, 0, 2) == static_cast<std::size_t>(-1));
    CHECK(sizing::state_bytes(16, 0, 257) == static_cast<std::size_t>(-1));
    CHECK(sizing::state_bytes(16, 0, 4) > sizing::state_bytes(16, 0, 2));
}
