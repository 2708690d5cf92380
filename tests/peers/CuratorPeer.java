// CuratorPeer: a Curator client that contends for the same locks as leasekeeper, for tests.
//
// java CuratorPeer [--session-ms N] MODE ARGS...
//   mutex CONNECT PATH CYCLES HOLD_MS RECORD_FILE WHO
//   semaphore CONNECT PATH N CYCLES HOLD_MS RECORD_FILE WHO
//   hold CONNECT PATH [RECORD_FILE WHO]
//   hold-semaphore CONNECT PATH N [RECORD_FILE WHO]
//   read|write|multi CONNECT PATH CYCLES HOLD_MS RECORD_FILE WHO
//   hold-read|hold-write|hold-multi CONNECT PATH [RECORD_FILE WHO]
//   clock
//   bench-uncontended CONNECT PATH N [WARMUP [ROUNDS [ROUND_WARMUP]]]
//   bench-handoff CONNECT PATH N WHO [HOLD_US [WARMUP [ROUNDS]]]
//   bench-handoff-read|bench-handoff-write CONNECT PATH N WHO [HOLD_US [WARMUP [ROUNDS]]]
//
// mutex/semaphore acquire (InterProcessMutex / InterProcessSemaphoreV2), append a start line
// to RECORD_FILE in lk-record's format, hold HOLD_MS, append an end line, release; CYCLES
// times (a cycle whose acquire fails prints "error acquiring" and counts as done), then
// print "done". hold/hold-semaphore acquire, print "acquired", and release when stdin
// closes or a line "release" arrives, then print "released". clock prints "nanotime T"
// (System.nanoTime(), CLOCK_MONOTONIC on Linux) and exits. read/write take the read or write
// lock of one InterProcessReadWriteLock on PATH; multi takes an InterProcessMultiLock of
// InterProcessMutexes on the comma-separated paths in PATH, in the order given (Curator's
// own order), and then RECORD_FILE may be comma-separated too: one file per path, each
// getting the same lines.
//
// The bench modes are scripts/bench's Curator side (see tests/tools/lk-bench.c for the same
// loops in leasekeeper); T is System.nanoTime(). bench-uncontended creates PATH
// (persistent), runs WARMUP (200) unprinted cycles of acquire() and release() on one
// InterProcessMutex, then N measured cycles, and prints "cycle I ACQUIRE_NS RELEASE_NS
// CYCLE_NS" for each after the loop: ACQUIRE from the call to acquire() until it returns,
// RELEASE the call to release() until it returns (after the delete's answer), CYCLE the sum.
// With ROUNDS, it prints "warmed" after the warm-up and then, ROUNDS times, waits for a
// line "go" on stdin, runs ROUND_WARMUP (0) unprinted and N measured cycles, prints them and
// "round-done". bench-handoff is one of two peers contending on PATH: it first runs WARMUP
// (0) uncontended cycles on a lock of its own (PATH-warmup-WHO) so that the JIT has compiled
// the hot paths and prints "warmed"; then, ROUNDS (1) times, it waits for "go", and N times
// acquires, prints "acquired WHO T" (T taken when acquire() returns), holds HOLD_US (2000),
// takes T, calls release() and prints "release WHO T"; then prints "round-done WHO".
// Both end with "done". bench-handoff-read and bench-handoff-write do the same with the read
// or write lock of an InterProcessReadWriteLock on PATH.
//
// Every mode prints "ready" once connected, connection state changes as "state NAME", and
// flushes each line. If the connection is SUSPENDED or LOST while a lease is held, the peer
// writes its end line at once (reason=suspended / reason=lost), as a careful Curator user
// stops its work then; the session may well still be alive on the server.

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorPeer {
    private static final long PID = ProcessHandle.current().pid();
    private static String recordFile;
    private static String who;
    private static boolean holding;
    private static boolean ended;

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    // One record line, one write() on an O_APPEND file.
    static void record(String kind, String extra) {
        if (recordFile == null) {
            return;
        }
        String line = kind + " " + who + " " + PID + " " + System.nanoTime() + extra + "\n";
        for (String file : recordFile.split(",")) {
            try (FileOutputStream out = new FileOutputStream(file, true)) {
                out.write(line.getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                say("error writing " + file + ": " + e);
                System.exit(3);
            }
        }
    }

    static synchronized void started() {
        holding = true;
        ended = false;
        record("start", " pgid=" + PID);
    }

    static synchronized void ended(String reason) {
        if (holding && !ended) {
            ended = true;
            record("end", " reason=" + reason);
        }
    }

    static synchronized void released() {
        holding = false;
    }

    static void usage() {
        System.err.println("usage: CuratorPeer [--session-ms N] mutex CONNECT PATH CYCLES HOLD_MS"
                + " RECORD_FILE WHO | semaphore CONNECT PATH N CYCLES HOLD_MS RECORD_FILE WHO"
                + " | hold CONNECT PATH [RECORD_FILE WHO]"
                + " | hold-semaphore CONNECT PATH N [RECORD_FILE WHO] | clock"
                + " | read|write|multi CONNECT PATH CYCLES HOLD_MS RECORD_FILE WHO"
                + " | hold-read|hold-write|hold-multi CONNECT PATH [RECORD_FILE WHO]"
                + " | bench-uncontended CONNECT PATH N [WARMUP [ROUNDS [ROUND_WARMUP]]]"
                + " | bench-handoff CONNECT PATH N WHO [HOLD_US [WARMUP [ROUNDS]]]");
        System.exit(2);
    }

    static CuratorFramework connect(String connect, int sessionMs) throws InterruptedException {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(Math.min(sessionMs, 15000))
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                .build();
        client.getConnectionStateListenable().addListener((c, state) -> {
            say("state " + state);
            if (state == ConnectionState.SUSPENDED) {
                ended("suspended");
            } else if (state == ConnectionState.LOST) {
                ended("lost");
            }
        });
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            say("error: not connected to " + connect + " after 30 s");
            System.exit(4);
        }
        say("ready");
        return client;
    }

    // Block until stdin closes or says "release".
    static void waitForRelease() throws IOException {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().equals("release")) {
                break;
            }
        }
    }

    // Create PATH as a persistent node if it is missing: the server reaps empty containers
    // (what acquire() would create) once a minute, which would put a parent create into a
    // measured cycle.
    static void benchFolder(CuratorFramework c, String path) throws Exception {
        try {
            c.create().creatingParentsIfNeeded().forPath(path);
        } catch (org.apache.zookeeper.KeeperException.NodeExistsException e) {
            // there already
        }
    }

    // Hold for us microseconds (the hold is not measured; its precision does not matter).
    static void benchHold(long us) {
        long end = System.nanoTime() + us * 1000;
        long left;
        while ((left = end - System.nanoTime()) > 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(left);
        }
    }

    // Block until the driver says "go" on stdin; exit if stdin closes first.
    static void benchGo(BufferedReader in) throws IOException {
        String line;
        while ((line = in.readLine()) != null && !line.trim().equals("go")) {
            // wait for the driver
        }
        if (line == null) {
            say("error: stdin closed before go");
            System.exit(1);
        }
    }

    static void benchUncontended(List<String> args, int sessionMs) throws Exception {
        if (args.size() < 4 || args.size() > 7) usage();
        int n = Integer.parseInt(args.get(3));
        int warmup = args.size() >= 5 ? Integer.parseInt(args.get(4)) : 200;
        int rounds = args.size() >= 6 ? Integer.parseInt(args.get(5)) : 0;
        int roundWarmup = args.size() == 7 ? Integer.parseInt(args.get(6)) : 0;
        CuratorFramework c = connect(args.get(1), sessionMs);
        benchFolder(c, args.get(2));
        InterProcessMutex m = new InterProcessMutex(c, args.get(2));
        for (int i = 0; i < warmup; i++) {
            m.acquire();
            m.release();
        }
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (rounds > 0) {
            say("warmed");
        }
        long[] acquire = new long[n];
        long[] release = new long[n];
        for (int r = 0; r < Math.max(rounds, 1); r++) {
            if (rounds > 0) {
                benchGo(in);
            }
            for (int i = 0; i < roundWarmup; i++) {
                m.acquire();
                m.release();
            }
            for (int i = 0; i < n; i++) {
                long t0 = System.nanoTime();
                m.acquire();
                long t1 = System.nanoTime();
                m.release();
                long t2 = System.nanoTime();
                acquire[i] = t1 - t0;
                release[i] = t2 - t1;
            }
            StringBuilder out = new StringBuilder();
            for (int i = 0; i < n; i++) {
                out.append("cycle ").append(i).append(' ').append(acquire[i]).append(' ')
                        .append(release[i]).append(' ').append(acquire[i] + release[i])
                        .append('\n');
            }
            System.out.print(out);
            if (rounds > 0) {
                say("round-done");
            }
        }
        say("done");
        c.close();
    }

    static void benchHandoff(List<String> args, int sessionMs) throws Exception {
        if (args.size() < 5 || args.size() > 8) usage();
        int n = Integer.parseInt(args.get(3));
        String me = args.get(4);
        long holdUs = args.size() >= 6 ? Long.parseLong(args.get(5)) : 2000;
        int warmup = args.size() >= 7 ? Integer.parseInt(args.get(6)) : 0;
        int rounds = args.size() == 8 ? Integer.parseInt(args.get(7)) : 1;
        CuratorFramework c = connect(args.get(1), sessionMs);
        benchFolder(c, args.get(2));
        if (warmup > 0) {
            String own = args.get(2) + "-warmup-" + me;
            benchFolder(c, own);
            InterProcessMutex w = new InterProcessMutex(c, own);
            for (int i = 0; i < warmup; i++) {
                w.acquire();
                w.release();
            }
        }
        say("warmed");
        InterProcessLock m = args.get(0).equals("bench-handoff")
                ? new InterProcessMutex(c, args.get(2))
                : lockOf(c, args.get(0), args.get(2));
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (int r = 0; r < rounds; r++) {
            benchGo(in);
            for (int i = 0; i < n; i++) {
                m.acquire();
                long t = System.nanoTime();
                say("acquired " + me + " " + t);
                benchHold(holdUs);
                t = System.nanoTime();
                m.release();
                say("release " + me + " " + t);
            }
            say("round-done " + me);
        }
        say("done " + me);
        c.close();
    }

    // The lock of a read, write or multi mode on PATH.
    static InterProcessLock lockOf(CuratorFramework c, String mode, String path) {
        if (mode.endsWith("read")) {
            return new InterProcessReadWriteLock(c, path).readLock();
        }
        if (mode.endsWith("write")) {
            return new InterProcessReadWriteLock(c, path).writeLock();
        }
        return new InterProcessMultiLock(c, List.of(path.split(",")));
    }

    // read, write, multi: CYCLES turns of acquire, record, hold, record, release.
    static void lockCycles(List<String> args, int sessionMs) throws Exception {
        if (args.size() != 7) usage();
        recordFile = args.get(5);
        who = args.get(6);
        CuratorFramework c = connect(args.get(1), sessionMs);
        InterProcessLock m = lockOf(c, args.get(0), args.get(2));
        int cycles = Integer.parseInt(args.get(3));
        long holdMs = Long.parseLong(args.get(4));
        for (int i = 0; i < cycles; i++) {
            try {
                m.acquire();
            } catch (Exception e) {
                say("error acquiring: " + e);
                Thread.sleep(100);
                continue;
            }
            started();
            Thread.sleep(holdMs);
            ended("done");
            released();
            try {
                m.release();
            } catch (Exception e) {
                say("error releasing: " + e);
            }
        }
        say("done");
        c.close();
    }

    // hold-read, hold-write, hold-multi: acquire, say so, release when told.
    static void lockHold(List<String> args, int sessionMs) throws Exception {
        if (args.size() != 3 && args.size() != 5) usage();
        if (args.size() == 5) {
            recordFile = args.get(3);
            who = args.get(4);
        }
        CuratorFramework c = connect(args.get(1), sessionMs);
        InterProcessLock m = lockOf(c, args.get(0), args.get(2));
        m.acquire();
        started();
        say("acquired");
        waitForRelease();
        ended("done");
        released();
        m.release();
        say("released");
        c.close();
    }

    public static void main(String[] argv) throws Exception {
        List<String> args = new ArrayList<>(List.of(argv));
        int sessionMs = 10000;
        if (args.size() >= 2 && args.get(0).equals("--session-ms")) {
            sessionMs = Integer.parseInt(args.get(1));
            args = args.subList(2, args.size());
        }
        if (args.isEmpty()) {
            usage();
        }
        String mode = args.get(0);
        try {
            switch (mode) {
                case "clock":
                    say("nanotime " + System.nanoTime());
                    return;
                case "bench-uncontended":
                    benchUncontended(args, sessionMs);
                    return;
                case "bench-handoff":
                case "bench-handoff-read":
                case "bench-handoff-write":
                    benchHandoff(args, sessionMs);
                    return;
                case "read":
                case "write":
                case "multi":
                    lockCycles(args, sessionMs);
                    return;
                case "hold-read":
                case "hold-write":
                case "hold-multi":
                    lockHold(args, sessionMs);
                    return;
                case "mutex": {
                    if (args.size() != 7) usage();
                    recordFile = args.get(5);
                    who = args.get(6);
                    CuratorFramework c = connect(args.get(1), sessionMs);
                    InterProcessMutex m = new InterProcessMutex(c, args.get(2));
                    int cycles = Integer.parseInt(args.get(3));
                    long holdMs = Long.parseLong(args.get(4));
                    for (int i = 0; i < cycles; i++) {
                        try {
                            m.acquire();
                        } catch (Exception e) {
                            say("error acquiring: " + e);
                            Thread.sleep(100);
                            continue;
                        }
                        started();
                        Thread.sleep(holdMs);
                        ended("done");
                        released();
                        try {
                            m.release();
                        } catch (Exception e) {
                            say("error releasing: " + e);
                        }
                    }
                    say("done");
                    c.close();
                    return;
                }
                case "semaphore": {
                    if (args.size() != 8) usage();
                    recordFile = args.get(6);
                    who = args.get(7);
                    CuratorFramework c = connect(args.get(1), sessionMs);
                    InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(c, args.get(2),
                            Integer.parseInt(args.get(3)));
                    int cycles = Integer.parseInt(args.get(4));
                    long holdMs = Long.parseLong(args.get(5));
                    for (int i = 0; i < cycles; i++) {
                        Lease lease;
                        try {
                            lease = s.acquire();
                        } catch (Exception e) {
                            say("error acquiring: " + e);
                            Thread.sleep(100);
                            continue;
                        }
                        started();
                        Thread.sleep(holdMs);
                        ended("done");
                        released();
                        try {
                            s.returnLease(lease);
                        } catch (Exception e) {
                            say("error releasing: " + e);
                        }
                    }
                    say("done");
                    c.close();
                    return;
                }
                case "hold": {
                    if (args.size() != 3 && args.size() != 5) usage();
                    if (args.size() == 5) {
                        recordFile = args.get(3);
                        who = args.get(4);
                    }
                    CuratorFramework c = connect(args.get(1), sessionMs);
                    InterProcessMutex m = new InterProcessMutex(c, args.get(2));
                    m.acquire();
                    started();
                    say("acquired");
                    waitForRelease();
                    ended("done");
                    released();
                    m.release();
                    say("released");
                    c.close();
                    return;
                }
                case "hold-semaphore": {
                    if (args.size() != 4 && args.size() != 6) usage();
                    if (args.size() == 6) {
                        recordFile = args.get(4);
                        who = args.get(5);
                    }
                    CuratorFramework c = connect(args.get(1), sessionMs);
                    InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(c, args.get(2),
                            Integer.parseInt(args.get(3)));
                    Lease lease = s.acquire();
                    started();
                    say("acquired");
                    waitForRelease();
                    ended("done");
                    released();
                    s.returnLease(lease);
                    say("released");
                    c.close();
                    return;
                }
                default:
                    usage();
            }
        } catch (Exception e) {
            say("error: " + e);
            e.printStackTrace();
            System.exit(1);
        } finally {
            System.out.flush();
        }
    }
}
