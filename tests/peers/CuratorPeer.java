// CuratorPeer: a Curator client that contends for the same locks as leasekeeper, for tests.
//
// java CuratorPeer [--session-ms N] MODE ARGS...
//   mutex CONNECT PATH CYCLES HOLD_MS RECORD_FILE WHO
//   semaphore CONNECT PATH N CYCLES HOLD_MS RECORD_FILE WHO
//   hold CONNECT PATH [RECORD_FILE WHO]
//   hold-semaphore CONNECT PATH N [RECORD_FILE WHO]
//   clock
//
// mutex/semaphore acquire (InterProcessMutex / InterProcessSemaphoreV2), append a start line
// to RECORD_FILE in lk-record's format, hold HOLD_MS, append an end line, release; CYCLES
// times (a cycle whose acquire fails prints "error acquiring" and counts as done), then
// print "done". hold/hold-semaphore acquire, print "acquired", and release when stdin
// closes or a line "release" arrives, then print "released". clock prints "nanotime T"
// (System.nanoTime(), CLOCK_MONOTONIC on Linux) and exits.
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
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
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
        try (FileOutputStream out = new FileOutputStream(recordFile, true)) {
            out.write(line.getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            say("error writing " + recordFile + ": " + e);
            System.exit(3);
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
                + " | hold-semaphore CONNECT PATH N [RECORD_FILE WHO] | clock");
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
