/* The floor: what any plugin must pay at least. Reads stdin to EOF, writes a
 * fixed JSON line, exits. Built static, so it pays no dynamic loader. */
#include <unistd.h>

int main(void) {
    char buf[65536];
    while (read(0, buf, sizeof buf) > 0) {
    }
    static const char out[] = "{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"1.0.0\"]}\n";
    return write(1, out, sizeof out - 1) == sizeof out - 1 ? 0 : 1;
}
