// A C++ program that throws exceptions through frames that hold large allocations
// (std::vector buffers the recorder tracks as objects), catches them at several depths,
// and rethrows some. Prints the work done and a checksum; exit status 0.
//
// usage: cxx_throw ROUNDS
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

struct Overflow : std::runtime_error {
    std::uint64_t value;
    explicit Overflow(std::uint64_t v) : std::runtime_error("overflow"), value(v)
    {
    }
};

static std::uint64_t descend(int depth, std::uint64_t seed)
{
    // 256 KiB per frame: over the recorder's default object threshold (128 KiB).
    std::vector<std::uint64_t> frame(32768, seed + depth);
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < frame.size(); i += 8)
        sum += frame[i] ^ i;
    if (depth == 0) {
        if (seed % 3 != 0)
            throw Overflow(sum);
        return sum;
    }
    if (depth == 4) {
        try {
            return sum + descend(depth - 1, seed);
        } catch (const Overflow &e) {
            if (seed % 3 == 1)
                throw; // rethrow through the frames above
            return sum + e.value;
        }
    }
    return sum + descend(depth - 1, seed);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? std::atoi(argv[1]) : 200;
    std::uint64_t total = 0, caught = 0;
    auto big = std::make_unique<std::uint64_t[]>(1 << 21); // 16 MiB kept for the whole run
    for (int r = 0; r < rounds; r++) {
        try {
            total += descend(8, static_cast<std::uint64_t>(r));
        } catch (const Overflow &e) {
            caught++;
            total += e.value;
        }
        big[static_cast<std::size_t>(r) * 4099 % (1 << 21)] += total;
    }
    std::uint64_t check = 0;
    for (std::size_t i = 0; i < (1u << 21); i += 512)
        check += big[i];
    std::printf("rounds %d caught %llu total %llu check %llu\n", rounds,
                static_cast<unsigned long long>(caught), static_cast<unsigned long long>(total),
                static_cast<unsigned long long>(check));
    return 0;
}
