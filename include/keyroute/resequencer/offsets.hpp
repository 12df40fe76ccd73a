#pragma once

/// @file
/// One partition's read position in a resequencer: which offsets were taken, which are to be
/// re-read after a restore, and the offset that is safe to commit.
///
/// Contract (push()'s): a partition's events are pushed in offset order, so an offset below the
/// highest one taken was read before, unless it is one the restored checkpoint still held (a
/// re-read, taken again once). Invariants: next() is -1 before the first offset, else one past
/// the highest taken; every re-read offset is below next().

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

namespace keyroute::detail {

class partition_offsets {
public:
    /// What an offset is to this partition.
    enum class seen {
        fresh,      ///< at or above next(): not read before
        reread,     ///< held at the restored checkpoint: to be taken again, once
        duplicate,  ///< taken before
    };

    [[nodiscard]] auto classify(std::int64_t offset) const -> seen {
        if (offset >= m_next) return seen::fresh;
        return m_rereads.count(offset) != 0 ? seen::reread : seen::duplicate;
    }

    /// Records `offset` as taken (`reread`: classify() said so). Returns whether it was one of
    /// the re-reads still expected (it is not any more).
    auto take(std::int64_t offset, bool reread) -> bool {
        const bool erased = reread && m_rereads.erase(offset) != 0;
        if (offset >= m_next) m_next = offset + 1;
        return erased;
    }

    /// Loads a checkpoint's position: `held` are offsets below `next` to be re-read.
    void restore(std::int64_t next, const std::vector<std::int64_t>& held) {
        m_next = next;
        m_rereads.insert(held.begin(), held.end());
    }

    /// The offset to commit (the next to read after a crash): the lowest of next(), the lowest
    /// offset still held (`lowest_held`, if any) and the lowest re-read still expected; nullopt
    /// before the first offset.
    [[nodiscard]] auto committable(std::optional<std::int64_t> lowest_held) const
        -> std::optional<std::int64_t> {
        if (m_next < 0) return std::nullopt;
        std::int64_t out = m_next;
        if (lowest_held) out = std::min(out, *lowest_held);
        if (!m_rereads.empty()) out = std::min(out, *m_rereads.begin());
        return out;
    }

    [[nodiscard]] auto next() const noexcept -> std::int64_t { return m_next; }
    /// Re-reads still expected, in increasing order.
    [[nodiscard]] auto rereads() const noexcept -> const std::set<std::int64_t>& {
        return m_rereads;
    }

private:
    std::int64_t m_next = -1;
    std::set<std::int64_t> m_rereads;
};

}  // namespace keyroute::detail
