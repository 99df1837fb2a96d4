/* Prints CLOCK_REALTIME in microseconds: the first thing a benchmark child does when it starts. */
#include <stdio.h>
#include <time.h>

int main(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    printf("%lld\n", (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
    return 0;
}
