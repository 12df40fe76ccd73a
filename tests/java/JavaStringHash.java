// Reads lines "<hex bytes> <expected hash as unsigned decimal>" and checks that Java's own
// new String(bytes, UTF_8).hashCode() equals the expected value. Exits 1 on any mismatch.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

public final class JavaStringHash {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        long lines = 0, mismatches = 0;
        for (String line; (line = in.readLine()) != null; ) {
            int space = line.indexOf(' ');
            String hex = line.substring(0, space);
            long expected = Long.parseLong(line.substring(space + 1));
            byte[] bytes = new byte[hex.length() / 2];
            for (int i = 0; i < bytes.length; i++) {
                bytes[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
            }
            long actual = Integer.toUnsignedLong(new String(bytes, StandardCharsets.UTF_8).hashCode());
            lines++;
            if (actual != expected) {
                if (mismatches < 10) {
                    System.out.println("mismatch: key " + hex + " java " + actual + " keyroute " + expected);
                }
                mismatches++;
            }
        }
        System.out.println(lines + " keys checked against Java's String.hashCode, " + mismatches + " mismatches");
        System.exit(mismatches == 0 && lines > 0 ? 0 : 1);
    }
}
