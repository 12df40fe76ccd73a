// libFuzzer target for keyroute::try_decode_stamp: any bytes must be rejected with a reason, or
// accepted as a real stamp whose canonical re-encoding decodes to the same stamp and is no
// longer than the input (version 1 accepts over-long varints, so bytes may differ).
// Build: -DKEYROUTE_BUILD_FUZZERS=ON with clang; run: fuzz_stamp_decode tests/fuzz/corpus/stamp
#include <keyroute/stamp.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    keyroute::stamp_error error = keyroute::stamp_error::none;
    const auto decoded = keyroute::try_decode_stamp(in, &error);
    if (!decoded) {
        if (error == keyroute::stamp_error::none) std::abort();
        return 0;
    }
    if (error != keyroute::stamp_error::none || !*decoded) std::abort();
    const auto encoded = keyroute::encode_stamp(*decoded);
    if (encoded.size > keyroute::max_encoded_stamp_size || encoded.size > size) std::abort();
    keyroute::stamp_error again_error = keyroute::stamp_error::empty;
    const auto again = keyroute::try_decode_stamp(encoded.view(), &again_error);
    if (!again || *again != *decoded || again_error != keyroute::stamp_error::none) std::abort();
    // A canonical input re-encodes to the very same bytes.
    if (encoded.size == size && encoded.view() != in) std::abort();
    return 0;
}
