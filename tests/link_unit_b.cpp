#include <keyroute/keyroute.hpp>

auto route_in_unit_b(std::string_view key) -> std::uint32_t {
    return keyroute::kafka_partitioner(16).route(key);
}
