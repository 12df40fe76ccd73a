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
#include <cstddef>
#include <cstdint>
#include <iterator>
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

    /// `offset` is about to be read: under push()'s contract nothing below it comes any more,
    /// so the re-reads still expected below it never will (retention or compaction deleted
    /// them since the checkpoint). Stops expecting them; returns how many.
    auto skip_rereads_below(std::int64_t offset) -> std::size_t {
        const auto end = m_rereads.lower_bound(offset);
        const auto n = static_cast<std::size_t>(std::distance(m_rereads.begin(), end));
        m_rereads.erase(m_rereads.begin(), end);
        return n;
    }

    /// Nothing below `offset` will be read any more (the reading jumped there): the re-reads
    /// below it are dropped (returns how many) and next() is at least `offset`, unless nothing
    /// was taken yet.
    auto skip_to(std::int64_t offset) -> std::size_t {
        const std::size_t n = skip_rereads_below(offset);
        if (m_next >= 0) m_next = std::max(m_next, offset);
        return n;
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
