#pragma once

/// @file
/// detail::sequencer: which events of one key on one lane carry a stamp, and where the ones that
/// must go home go, so that a resequencer can put the lane's events of the key back in order
/// (the contract at the top of resequencer.hpp).
///
/// A key's events on a lane alternate between *home stretches* (unstamped, all on the home
/// partition: their order is the partition's) and *spread stretches* (the key is being spread:
/// every event stamped). Each spread stretch is one episode, numbered from 0 without gaps:
/// - its first event (sequence 0) goes home, after the stretch's unstamped events there, so
///   nothing of the episode is delivered before them;
/// - the first event after it goes home stamped (the episode's last), so the unstamped events
///   after it wait behind the episode on home;
/// - an episode that reaches the last sequence number the lane can write ends the same way, and
///   the next spread event starts a new episode.
/// Only the events of spread stretches and these two markers carry stamps. The caller passes
/// `spread` only for an event it places off home or one within an open stretch: events of a key
/// that are all home are in the partition's order already (docs/router.md, "Stamps").

#include <cstdint>

namespace keyroute::detail {

/// One event's stamp fields and where the protocol sends it. `episode == 0`: no stamp.
struct sequenced {
    std::uint64_t episode = 0;
    std::uint64_t sequence = 0;
    bool must_go_home = false;
    bool spread = false;  ///< part of a spread stretch (may go anywhere the plan says)
    bool opened = false;  ///< this event opens a stretch
    bool closed = false;  ///< this event closes one
};

/// Per lane and key. `episodes` is the lane's last episode id, advanced by `step` for each new
/// episode: ids only grow on a lane.
class sequencer {
public:
    /// The next event of the key, which the plan would spread (`spread`) or keep home. `last` is
    /// the largest sequence number the lane may write (>= 1).
    auto next(bool spread, std::uint64_t& episodes, std::uint64_t step, std::uint32_t last) noexcept
        -> sequenced {
        sequenced s;
        if (m_close) {  // close_next(): this event closes the stretch, whatever the plan says
            m_close = false;
            spread = false;
        }
        if (spread) {
            if (m_episode == 0) {
                episodes += step;
                m_episode = episodes;
                m_next = 0;
                s.must_go_home = true;
                s.opened = true;
            }
            s.episode = m_episode;
            s.sequence = m_next;
            s.spread = true;
            if (m_next >= last) {
                s.must_go_home = true;  // the episode's last number: it ends on home
                s.closed = true;
                m_episode = 0;
            } else {
                ++m_next;
            }
            return s;
        }
        if (m_episode != 0) {  // the first event after a spread stretch: the episode's last
            s.episode = m_episode;
            s.sequence = m_next;
            s.must_go_home = true;
            s.closed = true;
            m_episode = 0;
        }
        return s;
    }

    /// next(true, ...) for an event that neither opens nor closes a stretch: while one is open
    /// and its next sequence is below `last`, the event's episode and sequence, and true;
    /// otherwise false, and nothing changed (next() decides).
    /// @pre !closing() (whoever calls close_next() ends the key's run, so the route path's run
    /// fast path does not come here; next() closes the stretch).
    auto continue_stretch(std::uint32_t last, std::uint64_t& episode,
                          std::uint64_t& sequence) noexcept -> bool {
        if (m_episode == 0 || m_next >= last) return false;
        episode = m_episode;
        sequence = m_next++;
        return true;
    }

    /// True while a spread stretch is open on this lane.
    [[nodiscard]] auto open() const noexcept -> bool { return m_episode != 0; }

    /// The lane passed to another thread: the next event of an open stretch closes it (home,
    /// stamped), so that it follows on home what the new thread sent there before.
    void close_next() noexcept { m_close = m_episode != 0; }
    /// True while close_next()'s event is still to come.
    [[nodiscard]] auto closing() const noexcept -> bool { return m_close; }

    /// Forgets the stretch (the slot went to another key).
    void reset() noexcept {
        m_episode = 0;
        m_next = 0;
        m_close = false;
    }

private:
    std::uint32_t m_next = 0;
    bool m_close = false;  // in m_next's padding: the sequencer stays 16 bytes
    std::uint64_t m_episode = 0;
};

}  // namespace keyroute::detail
