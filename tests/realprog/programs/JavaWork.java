// JIT-compiled work on large arrays and many small objects; prints checksums.
// usage: java JavaWork MILLIONS
import java.util.Arrays;
import java.util.HashMap;

public class JavaWork {
    public static void main(String[] args) {
        int n = (int) (Double.parseDouble(args.length > 0 ? args[0] : "4") * 1e6);
        long x = 12345;
        long[] values = new long[n];
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            values[i] = x >>> 17;
        }
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        long acc = 0;
        for (int i = 0; i < n; i += 7) acc += sorted[i] ^ values[i];
        HashMap<Long, long[]> buckets = new HashMap<>();
        for (int i = 0; i < n / 4; i++) {
            long k = values[i] % 100003;
            long[] b = buckets.get(k);
            if (b == null) buckets.put(k, new long[] {1, i});
            else b[0]++;
        }
        long bsum = 0;
        for (var e : buckets.entrySet()) bsum = (bsum + e.getKey() * e.getValue()[0] + e.getValue()[1]) % 1000000007L;
        System.out.println("acc " + acc);
        System.out.println("buckets " + buckets.size() + " " + bsum);
        System.out.println("median " + sorted[n / 2]);
    }
}
