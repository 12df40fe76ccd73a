// Reads a PNG screenshot and says what is in it, for tests/tool/check_skew_html.cmake:
//
//   png_check FILE [RRGGBB...]
//
// prints `width=W height=H colours=C background=F` (C: distinct colours, counted up to 4096;
// F: the share of pixels of the most common colour), then `RRGGBB=N` for each colour asked
// for: the pixels within 8 of it on every channel. 8-bit RGB or RGBA, not interlaced (what
// Chromium writes). Exit status 1 for a file it cannot read or decode.
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

auto be32(const unsigned char* p) -> std::uint32_t {
    return (std::uint32_t{p[0]} << 24U) | (std::uint32_t{p[1]} << 16U) |
           (std::uint32_t{p[2]} << 8U) | std::uint32_t{p[3]};
}

struct image {
    std::uint32_t width = 0;
    std::uint32_t height = 0;
    std::vector<std::array<unsigned char, 3>> pixels;  // RGB, row by row
};

auto paeth(int a, int b, int c) -> int {
    const int p = a + b - c;
    const int pa = std::abs(p - a);
    const int pb = std::abs(p - b);
    const int pc = std::abs(p - c);
    if (pa <= pb && pa <= pc) return a;
    return pb <= pc ? b : c;
}

auto decode(const std::vector<unsigned char>& file) -> image {
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (file.size() < 8 || !std::equal(signature, signature + 8, file.begin())) {
        throw std::runtime_error("not a PNG file");
    }
    image img;
    unsigned channels = 0;
    std::vector<unsigned char> compressed;
    for (std::size_t at = 8; at + 12 <= file.size();) {
        const std::uint32_t length = be32(&file[at]);
        if (length > file.size() - at - 12) throw std::runtime_error("truncated chunk");
        const std::string type(reinterpret_cast<const char*>(&file[at + 4]), 4);
        const unsigned char* data = &file[at + 8];
        if (type == "IHDR") {
            if (length < 13) throw std::runtime_error("short IHDR");
            img.width = be32(data);
            img.height = be32(data + 4);
            const unsigned depth = data[8];
            const unsigned colour_type = data[9];
            if (depth != 8 || (colour_type != 2 && colour_type != 6) || data[12] != 0) {
                throw std::runtime_error("only 8-bit RGB or RGBA, not interlaced");
            }
            channels = colour_type == 6 ? 4 : 3;
        } else if (type == "IDAT") {
            compressed.insert(compressed.end(), data, data + length);
        } else if (type == "IEND") {
            break;
        }
        at += std::size_t{length} + 12;
    }
    if (channels == 0 || img.width == 0 || img.height == 0 || img.width > 20000 ||
        img.height > 20000) {
        throw std::runtime_error("no usable IHDR");
    }
    const std::size_t stride = std::size_t{img.width} * channels;
    std::vector<unsigned char> raw((stride + 1) * img.height);
    uLongf raw_size = static_cast<uLongf>(raw.size());
    if (uncompress(raw.data(), &raw_size, compressed.data(),
                   static_cast<uLong>(compressed.size())) != Z_OK ||
        raw_size != raw.size()) {
        throw std::runtime_error("bad image data");
    }
    std::vector<unsigned char> previous(stride, 0);
    std::vector<unsigned char> row(stride);
    img.pixels.reserve(std::size_t{img.width} * img.height);
    for (std::uint32_t y = 0; y < img.height; ++y) {
        const unsigned char* line = &raw[y * (stride + 1)];
        const unsigned filter = line[0];
        for (std::size_t i = 0; i < stride; ++i) {
            const int x = line[i + 1];
            const int a = i >= channels ? row[i - channels] : 0;
            const int b = previous[i];
            const int c = i >= channels ? previous[i - channels] : 0;
            int v = 0;
            switch (filter) {
            case 0: v = x; break;
            case 1: v = x + a; break;
            case 2: v = x + b; break;
            case 3: v = x + (a + b) / 2; break;
            case 4: v = x + paeth(a, b, c); break;
            default: throw std::runtime_error("bad filter type");
            }
            row[i] = static_cast<unsigned char>(v & 0xff);
        }
        for (std::uint32_t px = 0; px < img.width; ++px) {
            const unsigned char* p = &row[std::size_t{px} * channels];
            img.pixels.push_back({p[0], p[1], p[2]});
        }
        previous.swap(row);
    }
    return img;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: png_check FILE [RRGGBB...]\n");
        return 2;
    }
    try {
        std::ifstream in(argv[1], std::ios::binary);
        if (!in) throw std::runtime_error("cannot open the file");
        const std::vector<unsigned char> file((std::istreambuf_iterator<char>(in)),
                                              std::istreambuf_iterator<char>());
        const image img = decode(file);
        std::map<std::uint32_t, std::uint64_t> colours;
        for (const auto& p : img.pixels) {
            const std::uint32_t rgb =
                (std::uint32_t{p[0]} << 16U) | (std::uint32_t{p[1]} << 8U) | p[2];
            const auto it = colours.find(rgb);
            if (it != colours.end()) {
                ++it->second;
            } else if (colours.size() < 4096) {
                colours.emplace(rgb, 1);
            }
        }
        std::uint64_t most = 0;
        for (const auto& [rgb, count] : colours) most = std::max(most, count);
        std::printf("width=%u height=%u colours=%zu background=%.4f\n", img.width, img.height,
                    colours.size(),
                    static_cast<double>(most) / static_cast<double>(img.pixels.size()));
        for (int k = 2; k < argc; ++k) {
            const unsigned long want = std::strtoul(argv[k], nullptr, 16);
            const int r = static_cast<int>((want >> 16U) & 0xffU);
            const int g = static_cast<int>((want >> 8U) & 0xffU);
            const int b = static_cast<int>(want & 0xffU);
            std::uint64_t near = 0;
            for (const auto& p : img.pixels) {
                if (std::abs(p[0] - r) <= 8 && std::abs(p[1] - g) <= 8 && std::abs(p[2] - b) <= 8)
                    ++near;
            }
            std::printf("%s=%llu\n", argv[k], static_cast<unsigned long long>(near));
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "png_check: %s: %s\n", argv[1], e.what());
        return 1;
    }
}
