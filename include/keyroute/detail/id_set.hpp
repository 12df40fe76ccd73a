#pragma once

/// @file
/// Validation of the partition id sets (and weights) that rendezvous and maglev route over.

#include "config.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace keyroute::detail {

/// `ids` 0..n-1, after checking n against [1, max].
inline auto iota_ids(std::uint64_t partitions, std::uint64_t max, const char* who)
    -> std::vector<std::uint32_t> {
    if (partitions == 0 || partitions > max) {
        invalid_argument(std::string(who) + ": partitions must be in [1, " + std::to_string(max) +
                         "], got " + std::to_string(partitions));
    }
    std::vector<std::uint32_t> ids(static_cast<std::size_t>(partitions));
    std::iota(ids.begin(), ids.end(), std::uint32_t{0});
    return ids;
}

/// Sorts `ids` (and `weights` along with them, when not empty) and rejects an empty set, a set
/// larger than `max`, duplicate ids, and weights that are not finite and > 0.
inline void check_id_set(std::vector<std::uint32_t>& ids, std::vector<double>& weights,
                         std::uint64_t max, const char* who) {
    if (ids.empty()) {
        invalid_argument(std::string(who) + ": ids must not be empty, got 0 ids");
    }
    if (ids.size() > max) {
        invalid_argument(std::string(who) + ": ids must hold at most " + std::to_string(max) +
                         " partitions, got " + std::to_string(ids.size()));
    }
    if (!weights.empty() && weights.size() != ids.size()) {
        invalid_argument(std::string(who) + ": weights must have one entry per id, got " +
                         std::to_string(weights.size()) + " weights for " +
                         std::to_string(ids.size()) + " ids");
    }
    for (std::size_t i = 0; i < weights.size(); ++i) {
        if (!(weights[i] > 0) || !std::isfinite(weights[i])) {
            std::ostringstream msg;
            msg << who << ": weights must be finite and > 0, got weights[" << i
                << "] = " << weights[i] << " (id " << ids[i] << ")";
            invalid_argument(msg.str());
        }
    }
    std::vector<std::size_t> order(ids.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return ids[a] < ids[b]; });
    std::vector<std::uint32_t> sorted_ids(ids.size());
    std::vector<double> sorted_weights(weights.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
        sorted_ids[i] = ids[order[i]];
        if (!weights.empty()) sorted_weights[i] = weights[order[i]];
        if (i > 0 && sorted_ids[i] == sorted_ids[i - 1]) {
            invalid_argument(std::string(who) + ": ids must be distinct, got id " +
                             std::to_string(sorted_ids[i]) + " more than once");
        }
    }
    ids = std::move(sorted_ids);
    weights = std::move(sorted_weights);
}

}  // namespace keyroute::detail
