#pragma once

/// @file
/// One partition's read position in a resequencer: which offsets were taken, which are to be
/// re-read after a restore, and the offset that is safe to commit.
///
/// Contract (push()'s): a partition's events are pushed in offset order, so an offset below the
/// highest one taken was read before, unless it is one the restored checkpoint still held (a
/// re-read, taken again once); a refused event is pushed again before any later offset (checked:
/// a later one throws, as it would make the refused one a duplicate). Invariants: next() is -1
/// before the first offset, else one past the highest taken; every re-read offset is below
/// next(); a refused offset owed is at or above next(), unless it is a re-read.

#include "../detail/config.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <string>
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

    /// @throws std::invalid_argument for an offset above a refused one not pushed again since
    ///         (`partition` names it in the message); nothing changes then.
    [[nodiscard]] auto classify(std::int64_t offset, std::uint32_t partition) -> seen {
        if (offset >= m_next) return seen::fresh;  // never while parked
        return classify_rest(offset, partition);
    }

    /// @throws std::invalid_argument, as classify() does, for an offset above a refused one
    ///         still owed: for what push() changes before it classifies (re-reads passed).
    void check_owed(std::int64_t offset, std::uint32_t partition) const {
        if (m_parked && offset > m_refused) owed(offset, partition);
    }

    /// `offset` (not taken: at or above next(), or a re-read) was refused: it is to be pushed
    /// again before any later one. Until then every offset takes classify()'s slow path (m_next
    /// is parked), so that the common case stays one compare.
    void refuse(std::int64_t offset) noexcept {
        if (!m_parked) {
            m_parked_next = m_next;
            m_next = std::numeric_limits<std::int64_t>::max();  // above every offset push() takes
            m_parked = true;
        }
        m_refused = offset;
    }

    /// Records `offset` as taken (`reread`: classify() said so). Returns whether it was one of
    /// the re-reads still expected (it is not any more).
    auto take(std::int64_t offset, bool reread) -> bool {
        const bool erased = reread && m_rereads.erase(offset) != 0;
        if (offset >= m_next) {
            m_next = offset + 1;
        } else if (m_parked && offset >= m_parked_next) {
            m_parked_next = offset + 1;  // below the refused one, out of partition order
        }
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
    /// was taken yet. A refused offset below it is owed no more.
    auto skip_to(std::int64_t offset) -> std::size_t {
        if (m_parked && offset > m_refused) unpark();
        const std::size_t n = skip_rereads_below(offset);
        std::int64_t& next = m_parked ? m_parked_next : m_next;
        if (next >= 0) next = std::max(next, offset);
        return n;
    }

    /// Loads a checkpoint's position: `held` are offsets below `next` to be re-read.
    void restore(std::int64_t next, const std::vector<std::int64_t>& held) {
        m_next = next;
        m_parked = false;
        m_rereads.insert(held.begin(), held.end());
    }

    /// The offset to commit (the next to read after a crash): the lowest of next(), the lowest
    /// offset still held (`lowest_held`, if any) and the lowest re-read still expected; nullopt
    /// before the first offset.
    [[nodiscard]] auto committable(std::optional<std::int64_t> lowest_held) const
        -> std::optional<std::int64_t> {
        if (next() < 0) return std::nullopt;
        std::int64_t out = next();
        if (lowest_held) out = std::min(out, *lowest_held);
        if (!m_rereads.empty()) out = std::min(out, *m_rereads.begin());
        return out;
    }

    [[nodiscard]] auto next() const noexcept -> std::int64_t {
        return m_parked ? m_parked_next : m_next;
    }
    /// Re-reads still expected, in increasing order.
    [[nodiscard]] auto rereads() const noexcept -> const std::set<std::int64_t>& {
        return m_rereads;
    }

private:
    [[noreturn]] void owed(std::int64_t offset, std::uint32_t partition) const {
        invalid_argument("keyroute resequencer::push: partition " + std::to_string(partition) +
                         " offset " + std::to_string(offset) + " pushed before offset " +
                         std::to_string(m_refused) +
                         ", which was refused, was pushed again (a refused event must be pushed "
                         "again before any later event of its partition, or it would be taken "
                         "for a duplicate)");
    }

    void unpark() noexcept {
        m_next = m_parked_next;
        m_parked = false;
    }

    // Out of classify()'s inlined text.
    [[gnu::noinline]] auto classify_rest(std::int64_t offset, std::uint32_t partition) -> seen {
        if (m_parked) {
            if (offset == m_refused) {
                unpark();  // pushed again: the contract is kept
            } else if (offset > m_refused) {
                owed(offset, partition);
            } else if (offset >= m_parked_next) {
                return seen::fresh;  // out of order below it
            }
        }
        if (offset >= m_next) return seen::fresh;
        return m_rereads.count(offset) != 0 ? seen::reread : seen::duplicate;
    }

    std::int64_t m_next = -1;         // 2^63 - 1 while parked
    std::int64_t m_parked_next = -1;  // next() while parked
    std::int64_t m_refused = -1;      // the refused offset owed, while parked
    bool m_parked = false;            // a refused offset is owed
    std::set<std::int64_t> m_rereads;
};

}  // namespace keyroute::detail
