/* test-net-denials.c: the destination of a refused packet, taken from the
 * first bytes the packet filter logs (runtime/net_denials.c): TCP and UDP
 * ports, ICMP and other protocols, and headers that lie about their
 * length, their version or their fragment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "net_denials.h"

#include <string.h>

/* An IPv4 header of 20 bytes to 10.99.0.1, protocol proto, then 4 bytes of ports (src 40000, dst 80). */
static void packet(unsigned char *p, unsigned char proto)
{
    memset(p, 0, 64);
    p[0] = 0x45;
    p[9] = proto;
    p[16] = 10, p[17] = 99, p[18] = 0, p[19] = 1;
    p[20] = 0x9c, p[21] = 0x40, p[22] = 0, p[23] = 80;
}

static void test_tcp_udp_icmp(void **state)
{
    (void)state;
    unsigned char p[64];
    abx_net_denial d;
    packet(p, 6);
    assert_true(abx__net_denial_parse(p, 40, &d));
    assert_string_equal(d.destination, "10.99.0.1");
    assert_string_equal(d.protocol, "tcp");
    assert_int_equal(d.port, 80);
    packet(p, 17);
    assert_true(abx__net_denial_parse(p, 24, &d));
    assert_string_equal(d.protocol, "udp");
    assert_int_equal(d.port, 80);
    packet(p, 1);
    assert_true(abx__net_denial_parse(p, 28, &d));
    assert_string_equal(d.protocol, "icmp");
    assert_int_equal(d.port, 0);
    packet(p, 132);
    assert_true(abx__net_denial_parse(p, 28, &d));
    assert_string_equal(d.protocol, "132");
}

static void test_what_is_not_a_whole_header_is_refused(void **state)
{
    (void)state;
    unsigned char p[64];
    abx_net_denial d;
    packet(p, 6);
    assert_false(abx__net_denial_parse(p, 19, &d)); /* shorter than a header */
    p[0] = 0x65;
    assert_false(abx__net_denial_parse(p, 40, &d)); /* not IPv4 */
    p[0] = 0x4f;                                    /* 60 bytes of header, 40 given */
    assert_false(abx__net_denial_parse(p, 40, &d));
    p[0] = 0x44; /* 16 bytes: less than the least */
    assert_false(abx__net_denial_parse(p, 40, &d));
    packet(p, 6);
    assert_true(abx__net_denial_parse(p, 22, &d)); /* the ports cut off: the address only */
    assert_int_equal(d.port, 0);
    p[6] = 0x00, p[7] = 0x10; /* a later fragment: what follows is no header */
    assert_true(abx__net_denial_parse(p, 40, &d));
    assert_int_equal(d.port, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tcp_udp_icmp),
        cmocka_unit_test(test_what_is_not_a_whole_header_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
