// What one hand-off between two threads costs on this machine: two threads pass a turn back and
// forth through a futex, each sleeping until the other wakes it, as a service's threads do when
// one hands a file on to the next. Measured twice: with the threads on two CPUs (a wake-up that
// crosses to another, often idle, CPU) and with both on one CPU.
// Usage: wakeup [ROUNDS] (two hand-offs a round, 20,000 rounds by default); prints one JSON line
// with the CPU time of the process per hand-off in microseconds, for each placement. Run by
// Benchmarks/durable_floor.py.
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static atomic_int turn;
static int rounds;

static double cpu_now(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

static void wait_for(int mine) {
    int seen;
    while ((seen = atomic_load(&turn)) != mine) syscall(SYS_futex, &turn, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

static void hand_to(int other) {
    atomic_store(&turn, other);
    syscall(SYS_futex, &turn, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("wakeup: sched_setaffinity");
        exit(1);
    }
}

static void *partner(void *cpu) {
    pin(*(int *)cpu);
    for (int i = 0; i < rounds; i++) {
        wait_for(1);
        hand_to(0);
    }
    return NULL;
}

// CPU time of the process per hand-off, with this thread on `mine` and its partner on `theirs`.
static double per_handoff(int mine, int theirs) {
    pthread_t thread;
    pin(mine);
    atomic_store(&turn, 0);
    double start = cpu_now();
    if (pthread_create(&thread, NULL, partner, &theirs) != 0) exit(1);
    for (int i = 0; i < rounds; i++) {
        hand_to(1);
        wait_for(0);
    }
    pthread_join(thread, NULL);
    return (cpu_now() - start) * 1e6 / (2.0 * rounds);
}

int main(int argc, char **argv) {
    rounds = argc > 1 ? atoi(argv[1]) : 20000;
    int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    double across = cpus > 1 ? per_handoff(0, 1) : 0;
    double same = per_handoff(0, 0);
    printf("{\"handoffs\": %d, \"across_cpus_us\": %.2f, \"same_cpu_us\": %.2f}\n", 2 * rounds, across, same);
    return 0;
}
