// Prints random keys (hex) with keyroute::java_string_hash of each, for JavaStringHash.java to
// check against the JDK. Keys mix ASCII, valid multi-byte UTF-8 (supplementary characters
// included) and ill-formed bytes (truncations, overlongs, surrogates, stray continuations).
#include <keyroute/hash.hpp>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

int main(int argc, char** argv) {
    const long count = argc > 1 ? std::atol(argv[1]) : 200000;
    std::mt19937_64 rng(20261130);
    const keyroute::java_string_hash hash;
    const unsigned char interesting[] = {0x00, 0x41, 0x7f, 0x80, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf,
                                         0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3,
                                         0xf4, 0xf5, 0xf8, 0xfe, 0xff, 0x9f, 0xa0, 0x8f, 0x90};
    for (long i = 0; i < count; ++i) {
        std::string key;
        const auto len = static_cast<std::size_t>(rng() % 24);
        const auto mode = rng() % 4;
        while (key.size() < len) {
            const auto pick = rng() % 8;
            if (mode == 0 || pick < 2) {
                key.push_back(static_cast<char>('a' + rng() % 26));
            } else if (mode == 1 || pick < 4) {
                key.push_back(static_cast<char>(interesting[rng() % sizeof interesting]));
            } else if (pick < 6) {
                // A valid code point, any plane, encoded as UTF-8 (surrogates excluded).
                auto cp = static_cast<std::uint32_t>(rng() % 0x110000);
                if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xe000;
                if (cp < 0x80) {
                    key.push_back(static_cast<char>(cp));
                } else if (cp < 0x800) {
                    key.push_back(static_cast<char>(0xc0 | (cp >> 6)));
                    key.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
                } else if (cp < 0x10000) {
                    key.push_back(static_cast<char>(0xe0 | (cp >> 12)));
                    key.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
                    key.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
                } else {
                    key.push_back(static_cast<char>(0xf0 | (cp >> 18)));
                    key.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
                    key.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
                    key.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
                }
            } else {
                key.push_back(static_cast<char>(rng() & 0xff));
            }
        }
        for (const char c : key)
            std::printf("%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
        std::printf(" %u\n", hash(key));
    }
    return 0;
}
