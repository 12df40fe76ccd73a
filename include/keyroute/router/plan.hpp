#pragma once

/// @file
/// detail::plan_store: the placement the planner publishes and the lanes read: for each tracked
/// slot it spreads, a list of pieces (partition, share of the key's events).
///
/// Two piece buffers alternate between plans, under a sequence counter (a seqlock): plan k lives
/// in buffer k % 2 and is complete when the counter reads 2k; it reads 2k + 1 while plan k + 1 is
/// written into the other buffer. A reader takes a slot's pieces from a complete plan and checks
/// afterwards that no writer started on that plan's buffer meanwhile; a reader that loses the
/// race keeps its current run (the planner writes a few times a window, for microseconds). Every
/// field is an atomic, so readers never see a torn value, only a stale plan.

#include <atomic>
#include <cstdint>
#include <memory>

namespace keyroute::detail {

class plan_store {
public:
    static constexpr std::uint32_t max_pieces = (1U << 22U) - 1U;

    /// Result of pick(): `none` when the slot has no pieces in the current plan (it stays
    /// home), `busy` when the plan was being replaced during the read (keep the current run).
    enum class outcome { picked, none, busy };

    /// @pre slots >= 1, capacity <= max_pieces.
    plan_store(std::uint32_t slots, std::uint32_t capacity)
        : m_capacity(capacity),
          m_desc(std::make_unique<std::atomic<std::uint64_t>[]>(slots)),
          m_pieces(std::make_unique<std::atomic<std::uint64_t>[]>(2U * std::size_t{capacity})) {}

    [[nodiscard]] static constexpr auto bytes(std::uint32_t slots, std::uint32_t capacity) noexcept
        -> std::size_t {
        return std::size_t{slots} * 8U + 2U * std::size_t{capacity} * 8U;
    }

    [[nodiscard]] auto capacity() const noexcept -> std::uint32_t { return m_capacity; }

    // ---- the planner's side (one thread at a time) -------------------------------------------

    /// Starts writing the next plan; returns its number.
    auto begin() noexcept -> std::uint64_t {
        const std::uint64_t v = m_version.load(std::memory_order_relaxed);
        m_version.store(v + 1U, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
        m_writing = v / 2U + 1U;
        return m_writing;
    }

    /// Writes piece i of the plan being written: `partition`, with the pieces up to and
    /// including it covering cursor positions up to `end` (the last piece's end is 2^32 - 1).
    void write_piece(std::uint32_t i, std::uint32_t partition, std::uint32_t end) noexcept {
        m_pieces[(m_writing & 1U) * m_capacity + i].store((std::uint64_t{partition} << 32U) | end,
                                                          std::memory_order_relaxed);
    }

    /// Gives `slot` pieces [first, first + count) of the plan being written; count 0: none (the
    /// planner assigns every slot in every plan, so no slot keeps a stale plan).
    void assign(std::uint32_t slot, std::uint32_t first, std::uint32_t count) noexcept {
        m_desc[slot].store(((m_writing & id_mask) << 44U) | (std::uint64_t{first} << 22U) | count,
                           std::memory_order_relaxed);
    }

    /// Publishes the plan being written, of `used` pieces.
    void publish(std::uint32_t used) noexcept {
        m_used = used;
        m_version.store(2U * m_writing, std::memory_order_release);
    }

    /// Pieces the published plan holds (a slot's pieces may be appended after them).
    [[nodiscard]] auto used() const noexcept -> std::uint32_t { return m_used; }

    /// Appends to the published plan: piece i of the slot being added (at used() + i), in the
    /// buffer no reader looks at past used(). Then assign_appended() publishes the slot's pieces.
    void append_piece(std::uint32_t i, std::uint32_t partition, std::uint32_t end) noexcept {
        m_pieces[(m_writing & 1U) * m_capacity + m_used + i].store(
            (std::uint64_t{partition} << 32U) | end, std::memory_order_relaxed);
    }
    void assign_appended(std::uint32_t slot, std::uint32_t count) noexcept {
        m_desc[slot].store(((m_writing & id_mask) << 44U) | (std::uint64_t{m_used} << 22U) | count,
                           std::memory_order_release);
        m_used += count;
    }

    /// The number of the last published plan (0: none yet).
    [[nodiscard]] auto published() const noexcept -> std::uint64_t {
        return m_version.load(std::memory_order_acquire) / 2U;
    }

    // ---- the lanes' side ---------------------------------------------------------------------

    /// The partition for cursor position `u` among slot's pieces, skipping partitions for which
    /// `down(p)` is true (then the next piece that is up; `none` if none is).
    template <class Down>
    auto pick(std::uint32_t slot, std::uint32_t u, const Down& down,
              std::uint32_t& partition) const noexcept -> outcome {
        const std::uint64_t v1 = m_version.load(std::memory_order_acquire);
        const std::uint64_t k = v1 / 2U;  // the last complete plan
        const std::uint64_t d = m_desc[slot].load(std::memory_order_acquire);
        const std::uint64_t id = d >> 44U;
        if (id != (k & id_mask) || k == 0) {
            // Rewritten for the plan being written (begun before or after v1 was read): busy.
            return id == ((k + 1U) & id_mask) ? outcome::busy : outcome::none;
        }
        const auto first = static_cast<std::uint32_t>((d >> 22U) & max_pieces);
        const auto count = static_cast<std::uint32_t>(d & max_pieces);
        if (count == 0 || std::uint64_t{first} + count > m_capacity) return outcome::none;
        const std::atomic<std::uint64_t>* pieces = m_pieces.get() + (k & 1U) * m_capacity + first;
        // The first piece whose end is at or above u: binary search over the ends.
        std::uint32_t lo = 0;
        std::uint32_t hi = count - 1U;
        while (lo < hi) {
            const std::uint32_t mid = (lo + hi) / 2U;
            if (static_cast<std::uint32_t>(pieces[mid].load(std::memory_order_relaxed)) < u) {
                lo = mid + 1U;
            } else {
                hi = mid;
            }
        }
        std::uint32_t chosen = 0xffffffffU;
        for (std::uint32_t i = 0; i < count; ++i) {
            const auto p = static_cast<std::uint32_t>(
                pieces[(lo + i) % count].load(std::memory_order_relaxed) >> 32U);
            if (!down(p)) {
                chosen = p;
                break;
            }
        }
        std::atomic_thread_fence(std::memory_order_acquire);
        if (m_version.load(std::memory_order_relaxed) > 2U * k + 2U) return outcome::busy;
        if (chosen == 0xffffffffU) return outcome::none;
        partition = chosen;
        return outcome::picked;
    }

    /// The lighter of two picks: positions `u` and `u + 2^31` each pick a piece as pick() does,
    /// and the partition with the lower `load(p)` wins (the first on a tie, or when the second
    /// pick fails). A lane that sends each run to the lighter of two of its key's pieces, by its
    /// own counts, corrects between plans what the plan's shares got wrong (the power of two
    /// choices): each lane evens its own loads, so their sum is even too.
    template <class Down, class Load>
    auto pick_lighter(std::uint32_t slot, std::uint32_t u, const Down& down, const Load& load,
                      std::uint32_t& partition) const noexcept -> outcome {
        const outcome first = pick(slot, u, down, partition);
        if (first != outcome::picked) return first;
        std::uint32_t other = partition;
        if (pick(slot, u + 0x80000000U, down, other) == outcome::picked && other != partition &&
            load(other) < load(partition))
            partition = other;
        return outcome::picked;
    }

    /// The number of pieces slot has in the current plan (0: none), for stats and tests, and
    /// their partitions through `out(partition, share)` where share is in (0, 1].
    template <class Out>
    auto pieces_of(std::uint32_t slot, const Out& out) const noexcept -> std::uint32_t {
        const std::uint64_t v1 = m_version.load(std::memory_order_acquire);
        const std::uint64_t k = v1 / 2U;
        const std::uint64_t d = m_desc[slot].load(std::memory_order_acquire);
        if ((d >> 44U) != (k & id_mask) || k == 0) return 0;
        const auto first = static_cast<std::uint32_t>((d >> 22U) & max_pieces);
        const auto count = static_cast<std::uint32_t>(d & max_pieces);
        if (std::uint64_t{first} + count > m_capacity) return 0;
        const std::atomic<std::uint64_t>* pieces = m_pieces.get() + (k & 1U) * m_capacity + first;
        double before = 0;
        for (std::uint32_t i = 0; i < count; ++i) {
            const std::uint64_t piece = pieces[i].load(std::memory_order_relaxed);
            const double end =
                (static_cast<double>(static_cast<std::uint32_t>(piece)) + 1.0) / 4294967296.0;
            out(static_cast<std::uint32_t>(piece >> 32U), end - before);
            before = end;
        }
        return count;
    }

private:
    static constexpr std::uint64_t id_mask = (std::uint64_t{1} << 20U) - 1U;

    std::uint32_t m_capacity;
    std::uint64_t m_writing = 0;
    std::uint32_t m_used = 0;
    std::unique_ptr<std::atomic<std::uint64_t>[]> m_desc;
    std::unique_ptr<std::atomic<std::uint64_t>[]> m_pieces;
    alignas(64) std::atomic<std::uint64_t> m_version{0};
};

}  // namespace keyroute::detail
