// skew: how your keys would spread over partitions under static hashing, under a naive
// per-minute router (count each key per minute; past a threshold, round-robin over three
// sub-keys) and under keyroute's salting router, and how much ordering each gives up.
//
//   skew [options] [FILE | -]
//
// --html FILE also writes the report as one self-contained HTML page with charts
// (examples/skew_html.hpp).
//
// FILE holds one key per line ("-" reads standard input); with --csv-column N, the key is the
// N-th field (from 1) of each CSV line. With no FILE, skew runs its built-in workload: one tenant
// at 90% of the events, 1000 others, 100 partitions. Run `skew --help` for every option.
//
// Events get times: event i happens at i / rate seconds. The default rate makes the input span
// 4 windows (--window, default 60 s): the routers count per window, so a file of keys is
// replayed as four windows of traffic. Give --rate (events per second) to replay it at its real
// rate instead.
//
// Exit status: 0 on success, 1 if the input cannot be read, holds no key or has a malformed CSV
// line (or the output cannot be written), 2 for a bad option.
#include "../bench/workloads.hpp"
#include "skew_html.hpp"

#include <keyroute/detail/json.hpp>  // the reports' JSON string writer (built with this tool)
#include <keyroute/jump.hpp>
#include <keyroute/key_group.hpp>
#include <keyroute/maglev.hpp>
#include <keyroute/migration.hpp>
#include <keyroute/partitioner.hpp>
#include <keyroute/salting_router.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <clocale>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <locale>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#if __has_include(<unistd.h>)
#include <unistd.h>
#define SKEW_HAVE_ISATTY 1
#endif

namespace {

/// A cache prefetch hint, where the compiler has one: millions of keys do not fit in cache.
inline void prefetch(const void* address) {
#if defined(__GNUC__)
    __builtin_prefetch(address);
#else
    (void)address;
#endif
}

constexpr const char* usage_text = R"(usage: skew [options] [FILE | -]

Shows how keys spread over partitions under static hashing, a naive per-minute router (count
each key per window; past a threshold, round-robin over three sub-keys) and keyroute's salting
router: per-partition load, max/mean, the hottest keys and how many partitions each uses, and
how much ordering each gives up.

input:
  FILE                one key per line ("-": standard input); empty lines are skipped, a
                      line's final \r and a UTF-8 byte order mark at the start are dropped
  (no FILE)           the built-in workload (see --workload)
  --csv-column N      the key is field N (from 1) of each CSV line; fields may be "quoted",
                      with "" for a quote inside (no line breaks inside fields: an
                      unclosed quote or text after a closing quote, in any field of
                      any line, the header too, is an error)
  --header            skip the first line
  --workload NAME     built-in workload: tenant90 (default: one tenant at 90%, 100 partitions),
                      zipf1.0, zipf1.5 (100k keys, 64 partitions), zipf0.8 (1M keys, 16),
                      uniform (1M keys, 64), shifting (hot set reshuffled from window 2,
                      counting from 0)
  --events N          events of the built-in workload (default 1000000, at most 4e9; each
                      event takes 4 bytes of memory)

routing:
  --partitions N      partitions (default 100, or the built-in workload's)
  --scheme NAME       static hash: xxh3 (default, hash_partitioner<>), kafka (murmur2, Java
                      client), murmur3 (Pulsar), java (Pulsar JavaStringHash), crc32 and fnv1a
                      (librdkafka consistent and fnv1a)
  --window SECONDS    counting window of both routers, whole milliseconds (default 60)
  --rate EVENTS/S     event i happens at i / rate s (default: the input spans 4 windows; a
                      rate that puts the last event past the clock's range is refused)
  --threshold N       keyroute's hot threshold, events per key per window (default 0 = auto)
  --naive-threshold N the naive router's threshold (default: a tenth of the mean events per
                      partition per window; --seed-threshold is the same option)

output:
  --top N             partitions in each bar chart (default 8)
  --hot N             hottest keys listed (default 5)
  --migrate N         also report what moves from --partitions to N partitions, per scheme
                      (the per-partition report for the scheme in use)
  --migrate-detail    with --migrate: the per-partition report of every scheme
  --json              one JSON object on standard output instead of text
  --html FILE         also write the report to FILE as one HTML page with charts (no script,
                      nothing fetched: open it in any browser)
  -h, --help          this help

Exit status: 0 success, 1 unreadable, empty or malformed input or unwritable output, 2 bad usage.
)";

struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct input_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct options {
    std::string file;  // empty: built-in workload
    bool have_file = false;
    std::size_t csv_column = 0;  // 0: whole line
    bool header = false;
    std::string workload = "tenant90";
    std::uint64_t events = 1000000;
    std::uint32_t partitions = 0;  // 0: default
    std::string scheme = "xxh3";
    double window_s = 60;
    double rate = 0;  // 0: default
    std::uint64_t threshold = 0;
    std::uint64_t seed_threshold = 0;  // 0: default
    std::size_t top = 8;
    std::size_t hot = 5;
    std::uint32_t migrate = 0;
    bool migrate_detail = false;
    bool json = false;
    std::string html;  // empty: no HTML report
};

auto parse_uint(const std::string& option, const char* text, std::uint64_t min, std::uint64_t max)
    -> std::uint64_t {
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text, &end, 10);
    if (text[0] == '\0' || text[0] == '-' || *end != '\0' || errno != 0 || v < min || v > max) {
        throw usage_error(option + " needs an integer in [" + std::to_string(min) + ", " +
                          std::to_string(max) + "], got '" + text + "'");
    }
    return v;
}

auto parse_positive(const std::string& option, const char* text) -> double {
    char* end = nullptr;
    const double v = std::strtod(text, &end);
    if (text[0] == '\0' || *end != '\0' || !(v > 0) || !std::isfinite(v)) {
        throw usage_error(option + " needs a number > 0, got '" + text + "'");
    }
    return v;
}

auto parse_options(int argc, char** argv, bool& help) -> options {
    options o;
    bool events_given = false;
    bool workload_given = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto value = [&]() -> const char* {
            if (i + 1 >= argc) throw usage_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            help = true;
        } else if (a == "--csv-column") {
            o.csv_column = static_cast<std::size_t>(parse_uint(a, value(), 1, 100000));
        } else if (a == "--header") {
            o.header = true;
        } else if (a == "--workload") {
            workload_given = true;
            o.workload = value();
            const char* names[] = {"tenant90", "zipf1.0", "zipf1.5",
                                   "zipf0.8",  "uniform", "shifting"};
            if (std::find(std::begin(names), std::end(names), o.workload) == std::end(names)) {
                throw usage_error("unknown --workload '" + o.workload +
                                  "' (tenant90, zipf1.0, zipf1.5, zipf0.8, uniform, shifting)");
            }
        } else if (a == "--events") {
            events_given = true;
            o.events = parse_uint(a, value(), 1, 4000000000ULL);
        } else if (a == "--partitions" || a == "-p") {
            o.partitions = static_cast<std::uint32_t>(parse_uint(a, value(), 1, 65536));
        } else if (a == "--scheme") {
            o.scheme = value();
            const char* names[] = {"xxh3", "kafka", "murmur3", "java", "crc32", "fnv1a"};
            if (std::find(std::begin(names), std::end(names), o.scheme) == std::end(names)) {
                throw usage_error("unknown --scheme '" + o.scheme +
                                  "' (xxh3, kafka, murmur3, java, crc32, fnv1a)");
            }
        } else if (a == "--window") {
            const char* value_text = value();
            o.window_s = parse_positive(a, value_text);
            if (o.window_s < 0.001 || o.window_s > 86400.0 * 365) {
                throw usage_error("--window needs seconds in [0.001, 31536000]");
            }
            // The router's window is a whole number of milliseconds: refused rather than
            // rounded, so the windows reported and the default rate are the routers' own.
            // The tolerance is the rounding of parsing and multiplying (about 2e-16 relative):
            // a fraction of a millisecond is refused at any window length.
            const double ms = std::round(o.window_s * 1000);
            if (std::fabs(o.window_s * 1000 - ms) > 1e-14 * std::max(ms, 1.0)) {
                throw usage_error("--window needs a whole number of milliseconds, got '" +
                                  std::string(value_text) + "'");
            }
            o.window_s = ms / 1000;
        } else if (a == "--rate") {
            o.rate = parse_positive(a, value());
        } else if (a == "--threshold") {
            o.threshold = parse_uint(a, value(), 0, 0xffffffffULL);
        } else if (a == "--naive-threshold" || a == "--seed-threshold") {
            o.seed_threshold = parse_uint(a, value(), 1, 0xffffffffULL);
        } else if (a == "--top") {
            o.top = static_cast<std::size_t>(parse_uint(a, value(), 0, 1000000));
        } else if (a == "--hot") {
            o.hot = static_cast<std::size_t>(parse_uint(a, value(), 0, 1000));
        } else if (a == "--migrate") {
            o.migrate = static_cast<std::uint32_t>(parse_uint(a, value(), 1, 0x7fffffffULL));
        } else if (a == "--migrate-detail") {
            o.migrate_detail = true;
        } else if (a == "--json") {
            o.json = true;
        } else if (a == "--html") {
            o.html = value();
            if (o.html.empty()) throw usage_error("--html needs a file name");
        } else if (a.size() > 1 && a[0] == '-') {
            throw usage_error("unknown option '" + a + "'");
        } else if (o.have_file) {
            throw usage_error("one input file at most, got '" + o.file + "' and '" + a + "'");
        } else {
            o.file = a;
            o.have_file = true;
        }
    }
    if (!o.have_file && (o.csv_column != 0 || o.header)) {
        throw usage_error("--csv-column and --header apply to an input file");
    }
    if (o.have_file && (events_given || workload_given)) {
        throw usage_error("--events and --workload apply to the built-in workload, not to '" +
                          o.file + "'");
    }
    if (o.migrate_detail && o.migrate == 0) {
        throw usage_error("--migrate-detail needs --migrate N");
    }
    return o;
}

auto stderr_is_terminal() -> bool {
#ifdef SKEW_HAVE_ISATTY
    return isatty(2) == 1;
#else
    return false;
#endif
}

/// Progress on stderr, for large inputs only and only when stderr is a terminal.
class progress {
public:
    progress(bool enabled, std::uint64_t total) : m_enabled(enabled), m_total(total) {}
    void update(const char* what, std::uint64_t done) {
        if (!m_enabled) return;
        std::fprintf(stderr, "\rskew: %-24s %5.1f%%", what,
                     100.0 * static_cast<double>(done) / static_cast<double>(m_total));
        std::fflush(stderr);
    }
    void done() {
        if (m_enabled) std::fprintf(stderr, "\r%60s\r", "");
    }
    [[nodiscard]] auto enabled() const -> bool { return m_enabled; }

private:
    bool m_enabled;
    std::uint64_t m_total;
};

/// The key stream: distinct keys by id, and one key id per event, in order.
struct key_stream {
    std::string source;
    std::vector<std::string_view> keys;
    std::vector<std::uint32_t> events;
    std::vector<std::uint64_t> key_events;
    std::uint64_t skipped = 0;
    std::uint32_t default_partitions = 100;
    // Storage the views point into.
    std::unique_ptr<char, void (*)(void*)> buffer{nullptr, std::free};
    std::size_t buffer_size = 0;
    std::deque<std::string> owned;
    std::vector<std::string> generated;
};

/// Maps each distinct key to a dense id: open addressing, keys stay where they are. A slot holds
/// the key's 32-bit hash tag and id, and the tag alone picks the slot (Fibonacci hashing), so
/// growing never reads a key again. Lookups come in batches whose slots are prefetched first:
/// with millions of distinct keys, every probe is a cache miss.
class interner {
public:
    explicit interner(std::size_t expected_keys) {
        std::size_t slots = 1U << 16U;
        while (slots * 3 < expected_keys * 4 && slots < (std::size_t{1} << 31U)) slots *= 2;
        resize(slots);
    }

    static constexpr std::size_t batch = 16;

    /// Ids of `keys[0..count)`, in order, into `ids`; new keys are appended to `s`.
    void ids(key_stream& s, const std::string_view* keys, std::size_t count, std::uint32_t* ids) {
        std::uint32_t tags[batch];
        for (std::size_t k = 0; k < count; ++k) {
            tags[k] =
                static_cast<std::uint32_t>(XXH3_64bits(keys[k].data(), keys[k].size()) >> 32U);
            prefetch(&m_slots[position(tags[k])]);
        }
        // A key seen before is compared with its first occurrence: prefetch that too.
        std::uint32_t guess[batch];
        for (std::size_t k = 0; k < count; ++k) {
            const std::uint64_t slot = m_slots[position(tags[k])];
            guess[k] = static_cast<std::uint32_t>(slot >> 32U) == tags[k]
                           ? static_cast<std::uint32_t>(slot)
                           : 0;
            if (guess[k] != 0) prefetch(&s.keys[guess[k] - 1]);
        }
        for (std::size_t k = 0; k < count; ++k) {
            if (guess[k] != 0) prefetch(s.keys[guess[k] - 1].data());
        }
        for (std::size_t k = 0; k < count; ++k) ids[k] = id(s, keys[k], tags[k]);
    }

private:
    auto position(std::uint32_t tag) const -> std::size_t {
        return static_cast<std::size_t>((std::uint64_t{tag} * 0x9e3779b97f4a7c15ULL) >> m_shift);
    }

    auto id(key_stream& s, std::string_view key, std::uint32_t tag) -> std::uint32_t {
        std::size_t i = position(tag);
        while (true) {
            const std::uint64_t slot = m_slots[i];
            if (slot == 0) break;
            const auto found = static_cast<std::uint32_t>(slot) - 1U;
            if (static_cast<std::uint32_t>(slot >> 32U) == tag && s.keys[found] == key)
                return found;
            i = (i + 1) & m_mask;
        }
        if (s.keys.size() >= 0xfffffffeULL) throw input_error("more than 2^32 - 2 distinct keys");
        const auto fresh = static_cast<std::uint32_t>(s.keys.size());
        s.keys.push_back(key);
        s.key_events.push_back(0);
        m_slots[i] = (std::uint64_t{tag} << 32U) | (fresh + 1U);
        if (s.keys.size() * 4 > m_slots.size() * 3) resize(m_slots.size() * 2);
        return fresh;
    }

    void resize(std::size_t slots) {
        std::vector<std::uint64_t> old(slots, 0);
        old.swap(m_slots);
        m_mask = slots - 1;
        m_shift = 64U;
        for (std::size_t v = slots; v > 1; v >>= 1U) --m_shift;
        for (const std::uint64_t slot : old) {
            if (slot == 0) continue;
            std::size_t i = position(static_cast<std::uint32_t>(slot >> 32U));
            while (m_slots[i] != 0) i = (i + 1) & m_mask;
            m_slots[i] = slot;
        }
    }

    std::vector<std::uint64_t> m_slots;  // tag (32) | id + 1 (32); 0 = empty
    std::size_t m_mask = 0;
    unsigned m_shift = 64;
};

/// A file's or a stream's bytes, read in large blocks (no per-line I/O) into `s.buffer`.
void read_all(const options& o, key_stream& s) {
    const bool from_stdin = o.file == "-";
    std::error_code ec;
    if (!from_stdin && std::filesystem::is_directory(o.file, ec)) {
        throw input_error("cannot read '" + o.file + "': it is a directory");
    }
    std::FILE* f = from_stdin ? stdin : std::fopen(o.file.c_str(), "rb");
    if (f == nullptr) {
        throw input_error("cannot open '" + o.file + "': " + std::strerror(errno));
    }
    // A regular file's size is known: one allocation. Streams grow geometrically. malloc, not
    // std::string: nothing is zero-filled before fread overwrites it.
    std::size_t capacity = std::size_t{1} << 20U;
    if (!from_stdin && std::filesystem::is_regular_file(o.file, ec)) {
        const std::uintmax_t size = std::filesystem::file_size(o.file, ec);
        if (!ec && size > 0) capacity = static_cast<std::size_t>(size) + 1;
    }
    char* data = static_cast<char*>(std::malloc(capacity));
    std::size_t size = 0;
    bool failed = data == nullptr;
    int err = failed ? ENOMEM : 0;
    while (!failed) {
        if (size == capacity) {
            char* grown = static_cast<char*>(std::realloc(data, capacity * 2));
            if (grown == nullptr) {
                failed = true;
                err = ENOMEM;
                break;
            }
            data = grown;
            capacity *= 2;
        }
        const std::size_t got = std::fread(data + size, 1, capacity - size, f);
        size += got;
        if (got == 0) {
            failed = std::ferror(f) != 0;
            err = errno;
            break;
        }
    }
    if (!from_stdin) std::fclose(f);
    s.buffer.reset(data);
    s.buffer_size = size;
    if (failed) {
        throw input_error("cannot read '" + o.file + "': " + std::strerror(err));
    }
}

/// Field `column` (from 1) of a CSV line; quoted fields lose their quotes and "" becomes ".
/// Returns false when the line has fewer fields (column 0: checks the line, returns false).
/// Every quoted field of the line must close on it and be followed by a comma or the line's
/// end: anything else is an input_error naming the line (`"x"junk` is not read as x, an
/// unclosed quote does not take the rest of the line, and fields after the column are checked,
/// so a field spanning lines there does not make its next line a record of its own). A quote
/// inside an unquoted field is an ordinary character.
auto csv_field(std::string_view line, std::size_t column, key_stream& s, std::string_view& out,
               std::size_t line_no) -> bool {
    const auto bad = [&](const char* what) {
        throw input_error("line " + std::to_string(line_no) + " of " + s.source + ": " + what);
    };
    std::size_t i = 0;
    bool found = false;
    for (std::size_t field = 1;; ++field) {
        const bool want = field == column;
        if (i < line.size() && line[i] == '"') {
            std::size_t j = i + 1;
            bool escaped = false;
            bool closed = false;
            while (j < line.size()) {
                if (line[j] == '"') {
                    if (j + 1 < line.size() && line[j + 1] == '"') {
                        escaped = true;
                        j += 2;
                        continue;
                    }
                    closed = true;
                    break;
                }
                ++j;
            }
            if (!closed) {
                bad("a quoted field has no closing quote (a field cannot span lines)");
            }
            if (j + 1 < line.size() && line[j + 1] != ',') {
                bad("text after a quoted field's closing quote (write a quote inside one as \"\")");
            }
            if (want) {
                const std::string_view raw = line.substr(i + 1, j - i - 1);
                if (!escaped) {
                    out = raw;
                } else {
                    std::string unescaped;
                    for (std::size_t k = 0; k < raw.size(); ++k) {
                        unescaped += raw[k];
                        if (raw[k] == '"') ++k;
                    }
                    s.owned.push_back(std::move(unescaped));
                    out = s.owned.back();
                }
                found = true;
            }
            i = j + 1 < line.size() ? j + 1 : std::string_view::npos;
        } else {
            const std::size_t end = line.find(',', i);
            if (want) {
                out = line.substr(i,
                                  end == std::string_view::npos ? std::string_view::npos : end - i);
                found = true;
            }
            i = end;
        }
        if (i == std::string_view::npos) return found;
        ++i;
        // The rest of the line is only read for its quoted fields: without a quote, none.
        if (want && line.find('"', i) == std::string_view::npos) return true;
    }
}

auto load_file(const options& o) -> key_stream {
    key_stream s;
    s.source = o.file == "-" ? "standard input" : o.file;
    if (o.csv_column != 0) s.source += ", CSV column " + std::to_string(o.csv_column);
    read_all(o, s);
    const char* const end = s.buffer.get() + s.buffer_size;
    // A UTF-8 byte order mark (as some spreadsheet exports write) is no part of the first key.
    const bool bom = s.buffer_size >= 3 && std::memcmp(s.buffer.get(), "\xef\xbb\xbf", 3) == 0;
    const char* const begin = s.buffer.get() + (bom ? 3 : 0);
    std::size_t lines = 0;
    for (const char* p = begin; p < end; ++lines) {
        const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
        p = nl != nullptr ? static_cast<const char*>(nl) + 1 : end;
    }
    // Reserved, not touched: pages only get memory when used.
    s.events.reserve(lines);
    s.keys.reserve(lines);
    s.key_events.reserve(lines);
    interner table(lines);
    progress prog(stderr_is_terminal() && s.buffer_size > (std::size_t{64} << 20U), s.buffer_size);
    std::string_view batch[interner::batch];
    std::uint32_t ids[interner::batch];
    std::size_t pending = 0;
    const auto flush = [&] {
        table.ids(s, batch, pending, ids);
        for (std::size_t k = 0; k < pending; ++k) {
            ++s.key_events[ids[k]];
            s.events.push_back(ids[k]);
        }
        pending = 0;
    };
    bool first = true;
    std::size_t line_no = 0;
    for (const char* p = begin; p < end;) {
        const char* nl =
            static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
        const char* line_end = nl != nullptr ? nl : end;
        std::string_view line(p, static_cast<std::size_t>(line_end - p));
        p = nl != nullptr ? nl + 1 : end;
        if ((++line_no & 0xfffffU) == 0)
            prog.update("reading keys", static_cast<std::uint64_t>(p - begin));
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (first && o.header) {
            first = false;
            // The header is checked like the other lines: a quoted name spanning lines would
            // make its next line a record.
            std::string_view ignored;
            if (o.csv_column != 0) static_cast<void>(csv_field(line, 0, s, ignored, line_no));
            continue;
        }
        first = false;
        std::string_view key = line;
        if (o.csv_column != 0 && !csv_field(line, o.csv_column, s, key, line_no)) key = {};
        if (key.empty()) {
            ++s.skipped;
            continue;
        }
        batch[pending++] = key;
        if (pending == interner::batch) flush();
    }
    flush();
    prog.done();
    return s;
}

/// Event i happens at t0 + i / rate; t0 is a window boundary, so windows are whole.
struct timeline {
    std::chrono::system_clock::time_point t0;
    double ns_per_event = 0;
    std::int64_t window_ns = 0;
    std::uint64_t windows = 0;

    [[nodiscard]] auto offset_ns(std::uint64_t i) const -> std::int64_t {
        return static_cast<std::int64_t>(static_cast<double>(i) * ns_per_event);
    }
    [[nodiscard]] auto time(std::uint64_t i) const -> std::chrono::system_clock::time_point {
        return t0 + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                        std::chrono::nanoseconds(offset_ns(i)));
    }
    [[nodiscard]] auto window(std::uint64_t i) const -> std::uint64_t {
        return static_cast<std::uint64_t>(offset_ns(i) / window_ns);
    }
};

auto make_timeline(std::uint64_t events, double rate, double window_s) -> timeline {
    timeline t;
    const auto window_ms = static_cast<std::int64_t>(std::llround(window_s * 1000));
    t.window_ns = window_ms * 1000000;
    // 2023-11-14, rounded down to a window boundary of the router (windows align to the epoch).
    const std::int64_t start_ms = 1700000000000LL / window_ms * window_ms;
    t.t0 = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::milliseconds(start_ms)));
    t.ns_per_event = 1e9 / rate;
    // The last event's time must fit the clock, and the window count 32 bits (the naive router's
    // per-key counters keep a 32-bit window): a rate low enough to break either is refused.
    if (!std::isfinite(t.ns_per_event)) {
        std::ostringstream msg;
        msg << "--rate " << rate << " is too low: one event every " << 1 / rate
            << " s does not fit the clock";
        throw usage_error(msg.str());
    }
    const double span_ns = events <= 1 ? 0.0 : static_cast<double>(events - 1) * t.ns_per_event;
    // In double nanoseconds: the clock's range in int64 nanoseconds overflows where the clock
    // counts coarser ticks (microseconds in libc++, 100 ns in MSVC's library).
    const double room_ns = std::chrono::duration<double, std::nano>(
                               std::chrono::system_clock::time_point::max() - t.t0)
                               .count();
    if (!(span_ns < room_ns) || !(span_ns / static_cast<double>(t.window_ns) < 4294967295.0)) {
        std::ostringstream msg;
        msg << "--rate " << rate << " spreads " << events << " events over " << span_ns / 1e9
            << " s: more than the clock or 2^32 windows of " << window_s << " s hold";
        throw usage_error(msg.str());
    }
    t.windows = events == 0 ? 0 : t.window(events - 1) + 1;
    return t;
}

auto builtin_workload(const options& o, double window_s) -> key_stream {
    // The generators of bench/workloads.hpp (bench/simulate.cpp replays the same workloads).
    const keyroute_bench::workload wl =
        o.workload == "zipf1.0"    ? keyroute_bench::zipf(1.0, 100000, 64)
        : o.workload == "zipf1.5"  ? keyroute_bench::zipf(1.5, 100000, 64)
        : o.workload == "zipf0.8"  ? keyroute_bench::zipf(0.8, 1000000, 16)
        : o.workload == "uniform"  ? keyroute_bench::zipf(0.0, 1000000, 64)
        : o.workload == "shifting" ? keyroute_bench::shifting_hot_set()
                                   : keyroute_bench::tenant90();
    key_stream s;
    s.source = "built-in workload: " + wl.name;
    if (o.partitions != 0 && o.partitions != wl.partitions)
        s.source += " (here on " + std::to_string(o.partitions) + " partitions)";
    s.default_partitions = wl.partitions;
    s.generated = wl.keys;
    s.keys.assign(s.generated.begin(), s.generated.end());
    s.key_events.assign(s.keys.size(), 0);
    s.events.reserve(o.events);
    const double rate = o.rate > 0 ? o.rate : static_cast<double>(o.events) / (4 * window_s);
    const timeline t = make_timeline(o.events, rate, window_s);
    std::mt19937_64 rng(12345);
    // 4 bytes an event: --events 4000000000 holds 16 GB and takes minutes to draw.
    progress prog(stderr_is_terminal() && o.events >= 5000000, o.events);
    for (std::uint64_t i = 0; i < o.events; ++i) {
        const auto id = static_cast<std::uint32_t>(
            wl.next(rng, static_cast<int>(std::min<std::uint64_t>(t.window(i), 1000000))));
        ++s.key_events[id];
        s.events.push_back(id);
        if ((i & 0xfffffU) == 0) prog.update("drawing events", i);
    }
    prog.done();
    // Keys the draw never picked are no keys of this input.
    std::vector<std::string_view> keys;
    std::vector<std::uint64_t> counts;
    std::vector<std::uint32_t> remap(s.keys.size(), 0);
    for (std::size_t k = 0; k < s.keys.size(); ++k) {
        if (s.key_events[k] == 0) continue;
        remap[k] = static_cast<std::uint32_t>(keys.size());
        keys.push_back(s.keys[k]);
        counts.push_back(s.key_events[k]);
    }
    for (std::uint32_t& e : s.events) e = remap[e];
    s.keys = std::move(keys);
    s.key_events = std::move(counts);
    return s;
}

/// What one scheme did with the stream.
struct scheme_result {
    std::string name;
    std::string title;
    std::string note;
    std::vector<std::uint64_t> load;  // events per partition, whole input
    std::vector<double> window_max_over_mean;
    std::vector<std::uint64_t> window_index;  // the window of each entry: those with events
    std::uint64_t moved = 0;                  // events not on their key's static partition
    std::uint64_t split_keys = 0;             // keys seen on more than one partition
    std::uint64_t split_key_events = 0;       // events of those keys
    std::uint64_t salted = 0;                 // keyroute: placed by the hot-key logic
    std::uint64_t stamped = 0;                // keyroute: carrying an ordering stamp
    bool has_stamps = false;
    std::vector<std::uint32_t> hot_fanout;  // partitions used by each hot key
    std::size_t memory_bytes = 0;
    std::uint64_t threshold = 0;

    [[nodiscard]] auto max_over_mean() const -> double {
        std::uint64_t total = 0;
        for (const auto l : load) total += l;
        if (total == 0) return 0;
        return static_cast<double>(*std::max_element(load.begin(), load.end())) *
               static_cast<double>(load.size()) / static_cast<double>(total);
    }
};

/// Routes every event with `route(i, id) -> partition` and accumulates a scheme_result.
/// Per-key state is read at random (millions of keys do not fit in cache), so the state of the
/// event `ahead` places later is prefetched, and `prefetch_scheme(i, id)` lets the scheme do the
/// same.
struct tally_key {
    std::uint32_t first = 0;  // first partition + 1; tally::split_mark once split
    std::uint32_t hot = 0;    // hot key index + 1
};

class tally {
public:
    /// `keys` is scratch space, one entry per key, reused by every scheme (cleared here).
    tally(const key_stream& s, const timeline& t, std::uint32_t partitions,
          const std::vector<std::uint32_t>& home, const std::vector<std::uint32_t>& hot_ids,
          std::vector<tally_key>& keys)
        : m_s(s),
          m_t(t),
          m_n(partitions),
          m_home(home),
          m_keys(keys),
          m_hot_used(hot_ids.size(), std::vector<bool>(partitions, false)) {
        m_keys.assign(s.keys.size(), tally_key{});
        for (std::size_t h = 0; h < hot_ids.size(); ++h)
            m_keys[hot_ids[h]].hot = static_cast<std::uint32_t>(h + 1);
    }

    static constexpr std::uint64_t ahead = 16;

    template <class Route, class Prefetch>
    auto run(scheme_result r, progress& prog, Route&& route, Prefetch&& prefetch_scheme)
        -> scheme_result {
        r.load.assign(m_n, 0);
        std::vector<std::uint64_t> window_load(m_n, 0);
        std::uint64_t window = 0;
        std::uint64_t window_events = 0;
        const auto close_window = [&] {
            if (window_events == 0) return;
            const auto top = *std::max_element(window_load.begin(), window_load.end());
            r.window_max_over_mean.push_back(static_cast<double>(top) * m_n /
                                             static_cast<double>(window_events));
            r.window_index.push_back(window);
            std::fill(window_load.begin(), window_load.end(), 0);
            window_events = 0;
        };
        const std::uint64_t n = m_s.events.size();
        for (std::uint64_t i = 0; i < n; ++i) {
            if (i + ahead < n) {
                const std::uint32_t later = m_s.events[i + ahead];
                prefetch(&m_home[later]);
                prefetch(&m_keys[later]);
                prefetch_scheme(i + ahead, later);
            }
            const std::uint32_t id = m_s.events[i];
            const std::uint64_t w = m_t.window(i);
            if (w != window) {
                close_window();
                window = w;
            }
            const std::uint32_t p = route(i, id);
            ++r.load[p];
            ++window_load[p];
            ++window_events;
            if (p != m_home[id]) ++r.moved;
            tally_key& k = m_keys[id];
            if (k.first == 0) {
                k.first = p + 1;
            } else if (k.first != p + 1 && k.first != split_mark) {
                k.first = split_mark;
                ++r.split_keys;
                r.split_key_events += m_s.key_events[id];
            }
            if (k.hot != 0) m_hot_used[k.hot - 1][p] = true;
            if ((i & 0xfffffU) == 0) prog.update(r.name.c_str(), i);
        }
        close_window();
        for (const auto& used : m_hot_used) {
            r.hot_fanout.push_back(
                static_cast<std::uint32_t>(std::count(used.begin(), used.end(), true)));
        }
        return r;
    }

private:
    static constexpr std::uint32_t split_mark = 0xffffffffU;
    const key_stream& m_s;
    const timeline& m_t;
    std::uint32_t m_n;
    const std::vector<std::uint32_t>& m_home;
    std::vector<tally_key>& m_keys;
    std::vector<std::vector<bool>> m_hot_used;
};

struct analysis {
    std::string scheme_label;
    std::vector<scheme_result> schemes;
    std::vector<std::uint32_t> hot_ids;
    std::uint64_t seed_threshold = 0;
};

template <class Partitioner>
auto analyze(const key_stream& s, const timeline& t, const options& o, std::uint32_t partitions,
             const Partitioner& base, const std::string& label) -> analysis {
    analysis a;
    a.scheme_label = label;
    // The hottest keys, by events.
    std::vector<std::uint32_t> order(s.keys.size());
    for (std::uint32_t k = 0; k < order.size(); ++k) order[k] = k;
    const std::size_t hot = std::min(o.hot, order.size());
    std::partial_sort(
        order.begin(), order.begin() + static_cast<std::ptrdiff_t>(hot), order.end(),
        [&](std::uint32_t x, std::uint32_t y) {
            return s.key_events[x] != s.key_events[y] ? s.key_events[x] > s.key_events[y] : x < y;
        });
    a.hot_ids.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(hot));

    std::vector<std::uint32_t> home(s.keys.size());
    for (std::size_t k = 0; k < s.keys.size(); ++k) home[k] = base.route(s.keys[k]);

    std::vector<tally_key> scratch;
    const std::uint64_t n = s.events.size();
    const bool big = n >= 5000000;
    progress prog(stderr_is_terminal() && big, n);
    const double events_per_window = static_cast<double>(n) / static_cast<double>(t.windows);

    // 1. Static hashing.
    {
        tally tl(s, t, partitions, home, a.hot_ids, scratch);
        scheme_result r;
        r.name = "static";
        r.title = "static hashing: " + label;
        a.schemes.push_back(tl.run(
            std::move(r), prog, [&](std::uint64_t, std::uint32_t id) { return home[id]; },
            [](std::uint64_t, std::uint32_t) {}));
    }
    // 2. The naive router: count each key per window; past the threshold, key + "_sub_" +
    //    (count % 3). The static hash stands in for md5 (bench/seed_router.hpp has the md5 port).
    {
        a.seed_threshold =
            o.seed_threshold != 0
                ? o.seed_threshold
                : std::max<std::uint64_t>(
                      1, static_cast<std::uint64_t>(events_per_window / partitions / 10));
        struct counter {
            std::uint32_t window = 0xffffffffU;
            std::uint32_t count = 0;
        };
        std::vector<counter> counts(s.keys.size());
        std::unordered_map<std::uint32_t, std::array<std::uint32_t, 3>> subs;
        std::uint64_t tracker = 0;  // its dictionary never forgets a (key, minute) entry
        tally tl(s, t, partitions, home, a.hot_ids, scratch);
        scheme_result r;
        r.name = "seed";
        r.title = "naive per-minute router: above " + std::to_string(a.seed_threshold) +
                  " events per key per window, round-robin over 3 sub-keys";
        r.note = "with " + label + " in place of the md5 it is usually written with";
        const auto route = [&](std::uint64_t i, std::uint32_t id) -> std::uint32_t {
            const auto w = static_cast<std::uint32_t>(t.window(i));
            counter& k = counts[id];
            if (k.window != w) {
                k.window = w;
                k.count = 0;
                ++tracker;
            }
            const std::uint32_t c = ++k.count;
            if (c <= a.seed_threshold) return home[id];
            auto [it, fresh] = subs.try_emplace(id);
            if (fresh) {
                for (std::uint32_t sub = 0; sub < 3; ++sub) {
                    it->second[sub] =
                        base.route(std::string(s.keys[id]) + "_sub_" + std::to_string(sub));
                }
            }
            return it->second[c % 3];
        };
        r = tl.run(std::move(r), prog, route,
                   [&](std::uint64_t, std::uint32_t id) { prefetch(&counts[id]); });
        r.memory_bytes = tracker * (sizeof(std::string) + 32);
        a.schemes.push_back(std::move(r));
    }
    // 3. keyroute's salting router.
    {
        keyroute::salting_config c;
        c.partitions = partitions;
        c.threshold = o.threshold;
        c.window = std::chrono::milliseconds(t.window_ns / 1000000);
        c.producer_id = 1;
        c.seed = 7;
        keyroute::salting_router<Partitioner> router(c, base);
        tally tl(s, t, partitions, home, a.hot_ids, scratch);
        scheme_result r;
        r.name = "keyroute";
        r.title = std::string("keyroute::salting_router: ") +
                  (o.threshold == 0 ? "automatic threshold"
                                    : "threshold " + std::to_string(o.threshold)) +
                  ", runs of " + std::to_string(c.run_length) + ", base " + label;
        r.has_stamps = true;
        std::uint64_t salted = 0;
        std::uint64_t stamped = 0;
        const std::uint64_t n_events = s.events.size();
        r = tl.run(
            std::move(r), prog,
            [&](std::uint64_t i, std::uint32_t id) {
                const keyroute::route_decision d = router.decide(s.keys[id], t.time(i));
                salted += d.salted ? 1 : 0;
                stamped += d.stamp ? 1 : 0;
                return d.partition;
            },
            // The router reads the key's bytes: fetch its view early, then its bytes.
            [&](std::uint64_t later, std::uint32_t id) {
                prefetch(s.keys[id].data());
                if (later + tally::ahead < n_events)
                    prefetch(&s.keys[s.events[later + tally::ahead]]);
            });
        r.salted = salted;
        r.stamped = stamped;
        const keyroute::salting_stats st = router.stats();
        r.memory_bytes = st.memory_bytes;
        r.threshold = st.threshold;
        a.schemes.push_back(std::move(r));
    }
    prog.done();
    return a;
}

// ---- output ---------------------------------------------------------------------------------

auto group(std::uint64_t v) -> std::string {
    std::string digits = std::to_string(v);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

auto keys_text(std::uint64_t count) -> std::string {
    return group(count) + (count == 1 ? " key" : " keys");
}

/// The code point of a well-formed UTF-8 sequence of n bytes at the start of `text`.
auto code_point(std::string_view text, std::size_t n) -> std::uint32_t {
    const auto at = [&](std::size_t i) {
        return static_cast<std::uint32_t>(static_cast<unsigned char>(text[i]));
    };
    if (n == 1) return at(0);
    std::uint32_t cp = at(0) & (0x7fU >> n);
    for (std::size_t i = 1; i < n; ++i) cp = (cp << 6U) | (at(i) & 0x3fU);
    return cp;
}

/// Terminal columns of a code point: 0 for a combining mark, 2 for a wide (East Asian) one, as
/// the C library's wcwidth() says in a UTF-8 locale (main() selects one for LC_CTYPE); 1 each
/// without one. -1 for what must not reach a terminal raw: C0 and C1 control characters and
/// the bidirectional embedding, override and isolate controls (they reorder what follows).
auto columns_of(std::uint32_t cp) -> int {
    if (cp < 0x20U || (cp >= 0x7fU && cp < 0xa0U) || (cp >= 0x202aU && cp <= 0x202eU) ||
        (cp >= 0x2066U && cp <= 0x2069U))
        return -1;
#if defined(__unix__)
    if (MB_CUR_MAX > 1) return ::wcwidth(static_cast<wchar_t>(cp));
#endif
    return 1;
}

/// `key` as a terminal cell exactly `width` columns wide: characters take their terminal
/// columns (columns_of); a byte that is not UTF-8, and each byte of a character that must not
/// reach the terminal raw, is written \xNN (four columns); a key too long is cut at a
/// character boundary with "...", a short one padded with spaces (a cut at a byte count could
/// split a character).
auto printable(std::string_view key, std::size_t width) -> std::string {
    // Each character: its length in bytes (0 for one byte to escape) and its columns.
    const auto next = [&](std::size_t i, std::size_t& bytes) -> std::size_t {
        bytes = keyroute::detail::utf8_sequence(key.substr(i));
        const int cols = bytes == 0 ? -1 : columns_of(code_point(key.substr(i), bytes));
        if (cols < 0) {
            bytes = 0;
            return 4;
        }
        return static_cast<std::size_t>(cols);
    };
    std::size_t total = 0;
    for (std::size_t i = 0, bytes = 0; i < key.size(); i += bytes == 0 ? 1 : bytes)
        total += next(i, bytes);
    // "..." when cut; below 3 columns nothing but the dots fits.
    const std::size_t room = total <= width ? width : width >= 3 ? width - 3 : 0;
    std::string out;
    std::size_t columns = 0;
    std::size_t i = 0;
    for (std::size_t bytes = 0; i < key.size(); i += bytes == 0 ? 1 : bytes) {
        const std::size_t cost = next(i, bytes);
        if (columns + cost > room) break;
        if (bytes == 0) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(key[i]));
            out += buf;
        } else {
            out.append(key.data() + i, bytes);
        }
        columns += cost;
    }
    if (i < key.size()) {
        out += "...";
        columns += 3;
    }
    if (columns < width) out.append(width - columns, ' ');
    return out;
}

auto share(std::uint64_t part, std::uint64_t total) -> double {
    return total == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(total);
}

auto fmt(const char* format, double v) -> std::string {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

/// What ordering a scheme gave up, in words (the text report's and the HTML report's).
auto order_text(const scheme_result& r, std::uint64_t n) -> std::string {
    if (r.split_keys == 0) return "nothing given up: every key stayed on one partition";
    const std::string split = fmt("%.1f", share(r.split_key_events, n)) + "% of events belong to " +
                              keys_text(r.split_keys) + " split over several partitions";
    const std::string moved =
        fmt("%.1f", share(r.moved, n)) + "% of events left their key's partition";
    if (!r.has_stamps) {
        return split + " with no ordering metadata: their per-key order is lost (" + moved + ")";
    }
    return split + " (" + fmt("%.1f", share(r.salted, n)) + "% spread as hot, " + moved + "); " +
           fmt("%.1f", share(r.stamped, n)) +
           "% carry ordering stamps, from which a keyroute::resequencer restores each key's "
           "order at the consumer";
}

/// What state a scheme keeps, in words; empty for static hashing.
auto state_text(const scheme_result& r) -> std::string {
    if (r.name == "seed") {
        return "a (key, window) dictionary that is never evicted: ~" +
               group(r.memory_bytes / 1024) + " KiB at the end";
    }
    if (r.name == "keyroute") {
        return group(r.memory_bytes / 1024) + " KiB, fixed at construction; hot threshold " +
               group(r.threshold) + " events per key per window at the end";
    }
    return "";
}

/// `text` after `lead`, broken at spaces into lines of at most 96 columns, continuation lines
/// indented to `lead`'s width.
auto wrapped(const std::string& lead, const std::string& text) -> std::string {
    const std::size_t width = 96;
    std::string out = lead;
    std::size_t column = lead.size();
    std::size_t i = 0;
    while (i < text.size()) {
        std::size_t end = text.find(' ', i);
        if (end == std::string::npos) end = text.size();
        const std::size_t word = end - i;
        if (column > lead.size() && column + 1 + word > width) {
            out += "\n" + std::string(lead.size(), ' ');
            column = lead.size();
        } else if (column > lead.size()) {
            out += ' ';
            ++column;
        }
        out.append(text, i, word);
        column += word;
        i = end + 1;
    }
    return out + "\n";
}

void print_text(const key_stream& s, const timeline& t, const options& o, std::uint32_t partitions,
                double rate, const analysis& a) {
    const std::uint64_t n = s.events.size();
    std::printf("skew: %s events, %s distinct keys, %u partitions\n", group(n).c_str(),
                group(s.keys.size()).c_str(), partitions);
    std::printf(
        "  input: %s%s\n", s.source.c_str(),
        s.skipped != 0 ? (" (" + group(s.skipped) + " empty lines or keys skipped)").c_str() : "");
    std::printf("  times: %s events/s, %llu window%s of %g s (%s)\n", fmt("%.6g", rate).c_str(),
                static_cast<unsigned long long>(t.windows), t.windows == 1 ? "" : "s", o.window_s,
                o.rate > 0 ? "--rate"
                : n >= 4   ? "default: the input spans 4 windows; --rate to change"
                           : "default: events / 4 windows' time, each event its own window; "
                             "--rate to change");

    if (!a.hot_ids.empty()) {
        std::printf(
            "\nhottest keys                              events   share   partitions used: static  "
            "naive  keyroute\n");
        for (std::size_t h = 0; h < a.hot_ids.size(); ++h) {
            const std::uint32_t id = a.hot_ids[h];
            std::printf("  %s %12s  %5.1f%%  %25u  %5u  %8u\n", printable(s.keys[id], 32).c_str(),
                        group(s.key_events[id]).c_str(), share(s.key_events[id], n),
                        a.schemes[0].hot_fanout[h], a.schemes[1].hot_fanout[h],
                        a.schemes[2].hot_fanout[h]);
        }
    }
    const double mean = static_cast<double>(n) / partitions;
    for (const scheme_result& r : a.schemes) {
        std::printf("\n%s\n", r.title.c_str());
        if (!r.note.empty()) std::printf("  (%s)\n", r.note.c_str());
        std::printf("  max/mean %.2f   by window:", r.max_over_mean());
        const std::size_t shown = std::min<std::size_t>(r.window_max_over_mean.size(), 8);
        for (std::size_t w = 0; w < shown; ++w) std::printf(" %.2f", r.window_max_over_mean[w]);
        if (shown < r.window_max_over_mean.size()) {
            std::printf(
                " ... (%zu windows with events, worst %.2f)", r.window_max_over_mean.size(),
                *std::max_element(r.window_max_over_mean.begin(), r.window_max_over_mean.end()));
        }
        std::printf("\n");
        std::vector<std::uint32_t> order(partitions);
        for (std::uint32_t p = 0; p < partitions; ++p) order[p] = p;
        std::stable_sort(order.begin(), order.end(),
                         [&](std::uint32_t x, std::uint32_t y) { return r.load[x] > r.load[y]; });
        const std::uint64_t top = r.load[order.front()];
        const std::size_t bars = std::min<std::size_t>(o.top, partitions);
        for (std::size_t b = 0; b < bars; ++b) {
            const std::uint32_t p = order[b];
            const auto width =
                top == 0 ? 0
                         : static_cast<std::size_t>(std::lround(
                               40.0 * static_cast<double>(r.load[p]) / static_cast<double>(top)));
            std::printf("  p%-6u %7.2fx %s\n", p, static_cast<double>(r.load[p]) / mean,
                        std::string(width, '#').c_str());
        }
        if (bars < partitions) {
            std::printf(
                "  (busiest %zu of %u partitions, x = load / mean; least loaded: p%u at %.2fx)\n",
                bars, partitions, order.back(), static_cast<double>(r.load[order.back()]) / mean);
        }
        std::printf("%s", wrapped("  order: ", order_text(r, n)).c_str());
        const std::string state = state_text(r);
        if (!state.empty()) std::printf("%s", wrapped("  state: ", state).c_str());
    }
}

void print_json(std::ostream& out, const key_stream& s, const timeline& t, const options& o,
                std::uint32_t partitions, double rate, const analysis& a) {
    const std::uint64_t n = s.events.size();
    out << std::setprecision(10);
    out << "{\"input\":{\"source\":";
    keyroute::detail::write_json_string(out, s.source);
    out << ",\"events\":" << n << ",\"distinct_keys\":" << s.keys.size()
        << ",\"skipped\":" << s.skipped << ",\"partitions\":" << partitions << ",\"scheme\":";
    keyroute::detail::write_json_string(out, o.scheme);
    out << ",\"window_seconds\":" << o.window_s << ",\"rate\":" << rate
        << ",\"windows\":" << t.windows << ",\"seed_threshold\":" << a.seed_threshold
        << "},\"hot_keys\":[";
    for (std::size_t h = 0; h < a.hot_ids.size(); ++h) {
        const std::uint32_t id = a.hot_ids[h];
        out << (h == 0 ? "" : ",") << "{\"key\":";
        keyroute::detail::write_json_string(out, s.keys[id]);
        if (!keyroute::detail::valid_utf8(s.keys[id])) {
            // Bytes that are not UTF-8 are U+FFFD in "key": the exact bytes, in hex.
            out << ",\"key_hex\":";
            keyroute::detail::write_json_hex(out, s.keys[id]);
        }
        out << ",\"events\":" << s.key_events[id]
            << ",\"share\":" << share(s.key_events[id], n) / 100 << "}";
    }
    out << "],\"schemes\":[";
    for (std::size_t k = 0; k < a.schemes.size(); ++k) {
        const scheme_result& r = a.schemes[k];
        out << (k == 0 ? "" : ",") << "{\"name\":\"" << r.name << "\",\"description\":";
        keyroute::detail::write_json_string(out, r.title);
        if (!r.note.empty()) {
            out << ",\"note\":";
            keyroute::detail::write_json_string(out, r.note);
        }
        out << ",\"max_over_mean\":" << r.max_over_mean() << ",\"max_over_mean_by_window\":[";
        for (std::size_t w = 0; w < r.window_max_over_mean.size(); ++w) {
            out << (w == 0 ? "" : ",") << r.window_max_over_mean[w];
        }
        // Windows without events have no entry above: the window index of each entry.
        out << "],\"max_over_mean_window_index\":[";
        for (std::size_t w = 0; w < r.window_index.size(); ++w)
            out << (w == 0 ? "" : ",") << r.window_index[w];
        out << "],\"partition_load\":[";
        for (std::size_t p = 0; p < r.load.size(); ++p) out << (p == 0 ? "" : ",") << r.load[p];
        out << "],\"hot_key_partitions\":[";
        for (std::size_t h = 0; h < r.hot_fanout.size(); ++h)
            out << (h == 0 ? "" : ",") << r.hot_fanout[h];
        out << "],\"split_keys\":" << r.split_keys
            << ",\"split_key_event_share\":" << share(r.split_key_events, n) / 100
            << ",\"moved_share\":" << share(r.moved, n) / 100;
        if (r.has_stamps) {
            out << ",\"salted_share\":" << share(r.salted, n) / 100
                << ",\"stamped_share\":" << share(r.stamped, n) / 100
                << ",\"threshold\":" << r.threshold;
        }
        out << ",\"memory_bytes\":" << r.memory_bytes << "}";
    }
    out << "]";
}

/// The HTML report (skew_html.hpp) of what the text and JSON reports say, with the JSON's
/// numbers computed the same way.
void write_html(std::ofstream& out, const key_stream& s, const timeline& t, const options& o,
                std::uint32_t partitions, const analysis& a) {
    const std::uint64_t n = s.events.size();
    skew_html::report r;
    r.source = s.source;
    r.events = n;
    r.distinct_keys = s.keys.size();
    r.skipped = s.skipped;
    r.partitions = partitions;
    r.windows = t.windows;
    r.window_seconds = o.window_s;
    r.static_scheme = o.scheme;
    for (const std::uint32_t id : a.hot_ids) {
        r.hot_keys.push_back({s.keys[id], s.key_events[id], share(s.key_events[id], n) / 100});
    }
    for (const scheme_result& x : a.schemes) {
        skew_html::scheme h;
        h.name = x.name;
        h.label = x.name == "static" ? "static hashing"
                  : x.name == "seed" ? "naive per-minute router"
                                     : "keyroute salting router";
        h.description = x.title;
        h.note = x.note;
        h.max_over_mean = x.max_over_mean();
        h.window_max_over_mean = x.window_max_over_mean;
        h.window_index = x.window_index;
        h.load = x.load;
        h.hot_key_partitions = x.hot_fanout;
        h.split_keys = x.split_keys;
        h.split_key_event_share = share(x.split_key_events, n) / 100;
        h.moved_share = share(x.moved, n) / 100;
        h.has_stamps = x.has_stamps;
        h.salted_share = share(x.salted, n) / 100;
        h.stamped_share = share(x.stamped, n) / 100;
        h.memory_bytes = x.memory_bytes;
        h.order = order_text(x, n);
        h.state = state_text(x);
        r.schemes.push_back(std::move(h));
    }
    skew_html::write(out, r);
    out.close();
    if (!out) throw input_error("cannot write '" + o.html + "'");
}

// ---- migration ------------------------------------------------------------------------------

struct migration_row {
    std::string scheme;
    keyroute::migration_report report;
    std::string skipped;
};

template <class Before, class After>
void migrate_one(std::vector<migration_row>& rows, const std::string& name, const key_stream& s,
                 const std::vector<double>& weights, const Before& make_before,
                 const After& make_after) {
    migration_row row;
    row.scheme = name;
    try {
        const auto before = make_before();
        const auto after = make_after();
        row.report = keyroute::compare_partitioners(before, after, s.keys, weights);
        row.report.old_label = name + " n=" + std::to_string(before.partitions());
        row.report.new_label = name + " n=" + std::to_string(after.partitions());
    } catch (const std::invalid_argument& e) {
        row.skipped = e.what();
    }
    rows.push_back(std::move(row));
}

template <class Partitioner>
auto migrations(const key_stream& s, const options& o, std::uint32_t from, const std::string& label)
    -> std::vector<migration_row> {
    std::vector<migration_row> rows;
    std::vector<double> weights(s.key_events.begin(), s.key_events.end());
    const std::uint32_t to = o.migrate;
    migrate_one(
        rows, label, s, weights, [&] { return Partitioner(from); },
        [&] { return Partitioner(to); });
    if (o.scheme != "kafka") {
        migrate_one(
            rows, "kafka_partitioner", s, weights,
            [&] { return keyroute::kafka_partitioner(from); },
            [&] { return keyroute::kafka_partitioner(to); });
    }
    migrate_one(
        rows, "jump_partitioner<>", s, weights, [&] { return keyroute::jump_partitioner<>(from); },
        [&] { return keyroute::jump_partitioner<>(to); });
    migrate_one(
        rows, "maglev_partitioner<>", s, weights,
        [&] { return keyroute::maglev_partitioner<>(from); },
        [&] { return keyroute::maglev_partitioner<>(to); });
    const std::uint32_t groups = std::max<std::uint32_t>({128U, from, to});
    migrate_one(
        rows, "key_group_partitioner<> (G=" + std::to_string(groups) + ")", s, weights,
        [&] { return keyroute::key_group_partitioner<>(from, groups); },
        [&] { return keyroute::key_group_partitioner<>(to, groups); });
    return rows;
}

void print_migrations_text(const std::vector<migration_row>& rows, std::uint32_t from,
                           std::uint32_t to, bool every_scheme) {
    std::printf("\nmigration from %u to %u partitions (traffic = events per key in this input)\n",
                from, to);
    std::printf("  %-40s %12s %14s\n", "scheme", "keys moved", "events moved");
    for (const migration_row& r : rows) {
        if (!r.skipped.empty()) {
            std::printf("  %-40s skipped: %s\n", r.scheme.c_str(), r.skipped.c_str());
        } else {
            std::printf("  %-40s %11.2f%% %13.2f%%\n", r.scheme.c_str(),
                        100 * r.report.moved_key_share(), 100 * r.report.moved_traffic_share());
        }
    }
    // The full report for the scheme in use (the first row), or for every scheme.
    for (std::size_t i = 0; i < rows.size() && (i == 0 || every_scheme); ++i) {
        if (!rows[i].skipped.empty()) continue;
        std::printf("\n");
        std::ostringstream text;
        rows[i].report.write_text(text, 128);
        std::fputs(text.str().c_str(), stdout);
    }
}

/// 0 once standard output is written, or 1 with a message (a full disk; a closed pipe too where
/// SIGPIPE is ignored).
auto finish_output() -> int {
    errno = 0;
    const bool flushed = std::fflush(stdout) == 0;
    const int error = errno;
    if (flushed && std::ferror(stdout) == 0) return 0;
    std::fprintf(stderr, "skew: cannot write the output%s%s\n", error != 0 ? ": " : "",
                 error != 0 ? std::strerror(error) : "");
    return 1;
}

template <class Partitioner>
auto run(const options& o, const key_stream& s, std::uint32_t partitions, const timeline& t,
         double rate, const std::string& family) -> int {
    // "fold32(xxh3) % n (...)" -> "fold32(xxh3) % 100 (...)"
    std::string label = family;
    label.replace(label.find("% n") + 2, 1, std::to_string(partitions));
    const Partitioner base(partitions);
    // Opened first: a path that cannot be written is refused before the work.
    std::ofstream html;
    if (!o.html.empty()) {
        html.open(o.html, std::ios::binary);
        if (!html) throw input_error("cannot write '" + o.html + "': " + std::strerror(errno));
    }
    const analysis a = analyze(s, t, o, partitions, base, label);
    std::vector<migration_row> moves;
    if (o.migrate != 0) moves = migrations<Partitioner>(s, o, partitions, family);
    if (!o.html.empty()) write_html(html, s, t, o, partitions, a);
    if (o.json) {
        std::ostringstream out;
        out.imbue(std::locale::classic());
        print_json(out, s, t, o, partitions, rate, a);
        if (o.migrate != 0) {
            out << ",\"migration\":{\"from\":" << partitions << ",\"to\":" << o.migrate
                << ",\"schemes\":[";
            bool first = true;
            // Each entry names its scheme; a scheme that refuses the new count is listed with
            // the reason, not left out.
            for (const migration_row& r : moves) {
                out << (first ? "" : ",") << "{\"scheme\":";
                keyroute::detail::write_json_string(out, r.scheme);
                first = false;
                if (!r.skipped.empty()) {
                    out << ",\"skipped\":";
                    keyroute::detail::write_json_string(out, r.skipped);
                    out << "}";
                    continue;
                }
                std::ostringstream one;
                r.report.write_json(one);
                std::string text = one.str();
                while (!text.empty() && text.back() == '\n') text.pop_back();
                out << "," << text.substr(1);  // the report's fields, after its '{'
            }
            out << "]}";
        }
        out << "}\n";
        std::fputs(out.str().c_str(), stdout);
    } else {
        print_text(s, t, o, partitions, rate, a);
        if (o.migrate != 0) print_migrations_text(moves, partitions, o.migrate, o.migrate_detail);
    }
    return finish_output();
}

}  // namespace

int main(int argc, char** argv) {
    // Character widths for the hottest-keys table (wcwidth); only LC_CTYPE: numbers and messages
    // stay in the C locale. Without a UTF-8 locale every character counts one column.
    if (std::setlocale(LC_CTYPE, "C.UTF-8") == nullptr) std::setlocale(LC_CTYPE, "");
    options o;
    try {
        bool help = false;
        o = parse_options(argc, argv, help);
        if (help) {
            std::fputs(usage_text, stdout);
            return finish_output();
        }
    } catch (const usage_error& e) {
        std::fprintf(stderr, "skew: %s\n(skew --help lists the options)\n", e.what());
        return 2;
    }
    try {
        key_stream s = o.have_file ? load_file(o) : builtin_workload(o, o.window_s);
        if (s.events.empty()) throw input_error("no keys in " + s.source);
        const std::uint32_t partitions = o.partitions != 0 ? o.partitions : s.default_partitions;
        const double rate =
            o.rate > 0 ? o.rate : static_cast<double>(s.events.size()) / (4 * o.window_s);
        const timeline t = make_timeline(s.events.size(), rate, o.window_s);
        if (o.scheme == "kafka")
            return run<keyroute::kafka_partitioner>(o, s, partitions, t, rate,
                                                    "murmur2 % n (kafka_partitioner)");
        if (o.scheme == "murmur3")
            return run<keyroute::pulsar_murmur3_partitioner>(
                o, s, partitions, t, rate, "murmur3 % n (pulsar_murmur3_partitioner)");
        if (o.scheme == "java")
            return run<keyroute::pulsar_java_string_partitioner>(
                o, s, partitions, t, rate, "String.hashCode % n (pulsar_java_string_partitioner)");
        if (o.scheme == "crc32")
            return run<keyroute::rdkafka_consistent_partitioner>(
                o, s, partitions, t, rate, "crc32 % n (rdkafka_consistent_partitioner)");
        if (o.scheme == "fnv1a")
            return run<keyroute::rdkafka_fnv1a_partitioner>(
                o, s, partitions, t, rate, "fnv1a % n (rdkafka_fnv1a_partitioner)");
        return run<keyroute::hash_partitioner<>>(o, s, partitions, t, rate,
                                                 "fold32(xxh3) % n (hash_partitioner<>)");
    } catch (const usage_error& e) {  // an option that does not fit the input (--rate)
        std::fprintf(stderr, "skew: %s\n(skew --help lists the options)\n", e.what());
        return 2;
    } catch (const input_error& e) {
        std::fprintf(stderr, "skew: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "skew: %s\n", e.what());
        return 1;
    }
}
