// Six node-based containers of the same bytes and graded access, for bench/site_accuracy.py:
// std::map<int, Payload<K>> for K = 0..5, about 5 MiB of nodes each (20000 nodes of 256 B),
// built interleaved (one insert into each map in turn), so that with the program's allocator
// every heap page holds nodes of all six. Each round looks map K up LOOKUPS[K] times at
// pseudo-random keys (0, 1, 3, 10, 30, 100 thousand) and reads a byte of the payload found.
// argv[1]: rounds (default 60); argv[2]: nodes per map (default 20000).
// Prints a checksum that depends on every lookup.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

template <int K>
struct Payload {
    unsigned char data[216];   // + the key and the tree node's links: 256 B a node
};

template <int K>
using Map = std::map<int, Payload<K>>;

static const long LOOKUPS[6] = {0, 1000, 3000, 10000, 30000, 100000};

template <int K>
__attribute__((noinline)) static void insert_one(Map<K> &m, int key)
{
    Payload<K> &p = m[key];
    std::memset(p.data, (key * (K + 3)) & 0xff, sizeof p.data);
}

template <int K>
__attribute__((noinline)) static unsigned long look_up(const Map<K> &m, long count, int n,
                                                        unsigned long seed)
{
    unsigned long sum = 0, x = seed * 2654435761u + K;
    for (long i = 0; i < count; i++) {
        x = x * 6364136223846793005ul + 1442695040888963407ul;
        auto it = m.find((int)((x >> 33) % (unsigned long)n));
        if (it != m.end())
            sum += it->second.data[(x >> 20) % sizeof it->second.data];
    }
    return sum;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? std::atoi(argv[1]) : 60;
    int n = argc > 2 ? std::atoi(argv[2]) : 20000;
    if (rounds < 0 || n <= 0) {
        std::fprintf(stderr, "usage: %s [rounds] [nodes per map]\n", argv[0]);
        return 2;
    }
    Map<0> m0; Map<1> m1; Map<2> m2; Map<3> m3; Map<4> m4; Map<5> m5;
    for (int i = 0; i < n; i++) {
        int key = (int)((i * 7919L) % n);   // a permutation of 0..n-1 (7919 is prime)
        insert_one(m0, key); insert_one(m1, key); insert_one(m2, key);
        insert_one(m3, key); insert_one(m4, key); insert_one(m5, key);
    }
    unsigned long sum = 0;
    for (int r = 0; r < rounds; r++) {
        sum += look_up(m0, LOOKUPS[0], n, r);
        sum += look_up(m1, LOOKUPS[1], n, r);
        sum += look_up(m2, LOOKUPS[2], n, r);
        sum += look_up(m3, LOOKUPS[3], n, r);
        sum += look_up(m4, LOOKUPS[4], n, r);
        sum += look_up(m5, LOOKUPS[5], n, r);
    }
    std::printf("maps=6 nodes=%d rounds=%d sum=%lu\n", n, rounds, sum);
    return 0;
}
