// Two translation units include the whole library; they must link without duplicate symbols.
#include <keyroute/keyroute.hpp>

auto route_in_unit_a(std::string_view key) -> std::uint32_t {
    return keyroute::kafka_partitioner(16).route(key);
}
