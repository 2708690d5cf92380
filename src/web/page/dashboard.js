"use strict";
/*
 * The dashboard: polls /api/cluster (the view `leasekeeper status --json` prints, read by
 * `leasekeeper web`) and builds the page from it. Every string in it comes from ZooKeeper,
 * where anyone with write access writes anything: text goes into the DOM through
 * textContent (and title), classes only from the fixed names below, never innerHTML.
 * Fields a cluster's version does not record yet are shown when present, left out when not.
 */
(function () {
	var OUTCOMES = {
		ok: "ok", failed: "failed", timeout: "timeout",
		killed: "killed", missed: "missed", manual: "manual",
		oom: "oom", stopped: "stopped", start_failed: "start_failed",
		paused: "paused", replaced: "replaced", running: "running", other: "other"
	};
	var KNOWN_FIELDS = ["job", "znode", "outcome", "reason", "missed_reason", "node", "start", "end", "tick",
		"tick_time", "duration_ms", "status", "exit_status", "signal", "error", "fence", "locks", "cpu_usec",
		"memory_peak", "output", "output_tail", "manual", "trigger", "session", "v", "run_id", "running",
		"since", "pid", "after"];
	var doc = null;
	var selected = null;
	var linked = location.hash.indexOf("#run=") === 0; /* #run=JOB/ZNODE: open that run */
	var timer = null;

	function $(id) { return document.getElementById(id); }

	function str(v) {
		if (v === undefined || v === null) return "";
		if (typeof v === "object") return JSON.stringify(v);
		return String(v);
	}

	function el(tag, cls, text) {
		var e = document.createElement(tag);
		if (cls) e.className = cls;
		if (text !== undefined && text !== null && text !== "") e.textContent = str(text);
		return e;
	}

	function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); }

	/* A time in ms: RFC 3339 strings, or seconds (ticks) as numbers. */
	function time(v) {
		if (typeof v === "number") return v > 1e11 ? v : v * 1000;
		if (typeof v === "string") {
			if (/^[0-9]+$/.test(v)) return time(Number(v));
			var t = Date.parse(v);
			return isNaN(t) ? null : t;
		}
		return null;
	}

	function fmt(ms) {
		if (ms === null || ms === undefined) return "";
		return new Date(ms).toISOString().replace(/\.\d+Z$/, "Z").replace("T", " ");
	}

	function since(ms, now) {
		if (ms === null) return "";
		var s = Math.round((now - ms) / 1000);
		if (s < 0) return "in " + span(-s);
		return span(s) + " ago";
	}

	function span(s) {
		if (s < 120) return s + " s";
		if (s < 7200) return Math.round(s / 60) + " min";
		return Math.round(s / 3600) + " h";
	}

	/*
	 * A flag such as paused or drained: true, or an object saying by whom and since when (a
	 * job's "paused": {"by", "since", "stop_running"}; a worker's "drained" is true, with
	 * "leases_held" beside it).
	 */
	function flagged(v) { return v === true || v === "true" || (v !== null && typeof v === "object"); }

	function flagText(v, obj, name) {
		var parts = [], o = v && typeof v === "object" ? v : {};
		var by = o.by !== undefined ? o.by : obj[name + "_by"];
		var at = o.since !== undefined ? o.since : o.at !== undefined ? o.at : obj[name + "_at"];
		if (by) parts.push("by " + str(by));
		if (at) parts.push("since " + str(at));
		if (o.stop_running === true) parts.push("(runs stopped)");
		return parts.join(" ");
	}

	function badge(text, cls, title) {
		var b = el("span", "badge" + (cls ? " " + cls : ""), text);
		if (title) b.title = title;
		return b;
	}

	function manual(r) {
		return r.manual === true || r.reason === "manual" || r.trigger === "manual" ||
			r.cause === "manual";
	}

	function exitStatus(r) {
		return r.exit_status !== undefined ? r.exit_status : r.status;
	}

	/* One of OUTCOMES' names for a run record. */
	function outcome(r) {
		var o = typeof r.outcome === "string" ? r.outcome : r.reason;
		if (o === "aborted" || o === "deadline" || o === "lease_deadline" || o === "killed")
			return "killed";
		if (o === "manual" || o === undefined) {
			if (r.signal !== undefined) return "failed";
			var st = exitStatus(r);
			if (st !== undefined) return st === 0 ? "ok" : "failed";
			return o === "manual" ? "manual" : "other";
		}
		return Object.prototype.hasOwnProperty.call(OUTCOMES, o) ? o : "other";
	}

	function nodeName(n) { return str(n.node || n.data || n.znode); }

	function session(n) {
		return typeof n.session === "number" ? "0x" + n.session.toString(16) : str(n.session);
	}

	/*
	 * A holder or waiter: who, pid, and since when: a holder since it got the lease
	 * (held_since, or since when it got it at once), its queue time apart when it waited; a
	 * waiter since it queued. Another client's node by its data.
	 */
	function contender(n, cls) {
		var li = el("li", cls), now = time(doc && doc.generated) || Date.now();
		var held = cls === "holder" ? (n.held_since || n.since) : null;
		var text = nodeName(n) + (n.pid !== undefined ? " pid " + str(n.pid) : "") +
			(n.mode !== undefined ? " (" + str(n.mode) + ")" : "");
		if (held) {
			text += " holding since " + since(time(held), now);
			if (n.held_since && n.since && n.held_since !== n.since)
				text += " (queued " + since(time(n.since), now) + ")";
		} else if (n.since)
			text += " queued " + since(time(n.since), now);
		li.textContent = text;
		li.title = str(n.znode) + (n.session !== undefined ? " session " + session(n) : "") +
			(held ? ", lease since " + str(held) : "") + (n.since ? ", queued since " + str(n.since) : "");
		return li;
	}

	function labels(v) {
		var td = el("td");
		if (Array.isArray(v)) v.forEach(function (l) { td.appendChild(el("span", "chip", l)); });
		else if (v && typeof v === "object")
			Object.keys(v).forEach(function (k) { td.appendChild(el("span", "chip", k + "=" + str(v[k]))); });
		else if (v !== undefined) td.appendChild(el("span", "chip", v));
		return td;
	}

	function renderWorkers(now) {
		var body = $("workers").tBodies[0];
		var workers = doc.workers || [];
		clear(body);
		$("nworkers").textContent = "(" + workers.length +
			(doc.workers_omitted ? ", " + doc.workers_omitted + " more not read" : "") + ")";
		workers.forEach(function (w) {
			var tr = el("tr", "worker");
			tr.appendChild(el("td", "mono", w.node || w.znode));
			var st = el("td", null, w.state || "registered");
			if (flagged(w.drained)) {
				var held = typeof w.leases_held === "number" ? w.leases_held + " lease(s) still held" : "";
				st.appendChild(badge("drained", "warn", [flagText(w.drained, w, "drained"), held]
					.filter(Boolean).join(", ")));
			}
			if (w.unhealthy === true) {
				st.appendChild(badge("unhealthy", "bad", ["starts fail for reasons of its host, ranked last",
					str(w.unhealthy_since), str(w.unhealthy_reason)].filter(Boolean).join(": ")));
			}
			if (w.data_too_large) st.appendChild(badge("data too large", "bad"));
			tr.appendChild(st);
			tr.appendChild(el("td", "mono", w.version));
			tr.appendChild(el("td", "mono", w.host || w.data));
			tr.appendChild(el("td", "mono", w.pid));
			var s = el("td", null, w.start ? since(time(w.start), now) : "");
			s.title = str(w.start);
			tr.appendChild(s);
			tr.appendChild(el("td", null, w.containment));
			tr.appendChild(labels(w.labels));
			tr.appendChild(el("td", "mono", Array.isArray(w.jobs) ? w.jobs.map(str).join(", ") : w.jobs));
			body.appendChild(tr);
		});
		if (workers.length === 0) body.appendChild(emptyRow(9, "no worker registered"));
	}

	function emptyRow(cols, text) {
		var tr = el("tr"), td = el("td", "muted", text);
		td.colSpan = cols;
		tr.appendChild(td);
		return tr;
	}

	function list(items, cls, omitted) {
		var td = el("td"), ul = el("ul");
		(items || []).forEach(function (n) { ul.appendChild(contender(n, cls)); });
		if (omitted) ul.appendChild(el("li", "muted", omitted + " more not read"));
		if (!ul.firstChild) ul.appendChild(el("li", "muted", "none"));
		td.appendChild(ul);
		return td;
	}

	function sortedRuns(job) {
		return (job.runs || []).slice().sort(function (a, b) {
			return (runStart(a) || 0) - (runStart(b) || 0);
		});
	}

	function runStart(r) { var t = time(r.start); return t !== null ? t : time(r.tick); }

	/* A run in progress ends now: its bar grows at each refresh. */
	function runEnd(r) {
		if (r.running) return time(doc.generated) || Date.now();
		var t = time(r.end);
		return t !== null ? t : runStart(r);
	}

	/* A job's runs in progress (<job>/running), as runs: outcome "running", since its start. */
	function runningRuns(j) {
		return (Array.isArray(j.running) ? j.running : []).map(function (n) {
			return {running: true, outcome: "running", start: n.since, node: n.node, pid: n.pid,
				fence: n.fence, run_id: n.run_id, znode: "running/" + str(n.znode),
				tick_time: n.tick_time, locks: n.locks};
		});
	}

	/* A job's lock: its kind, and each of its locks with its mode when it has several. */
	function lockCell(j) {
		var td = el("td", null, j.kind === "read-write lock" ? "read-write lock" :
			str(j.leases) + (j.leases === 1 ? " (mutex)" : " (semaphore)"));
		if (Array.isArray(j.locks)) {
			var ul = el("ul", "locks");
			j.locks.forEach(function (k) {
				ul.appendChild(el("li", "mono small", str(k && k.path) + " (" + str(k && k.mode) + ")"));
			});
			td.appendChild(ul);
		}
		return td;
	}

	function renderJobs(now) {
		var body = $("jobs").tBodies[0];
		var jobs = doc.jobs || [];
		clear(body);
		$("njobs").textContent = "(" + jobs.length +
			(doc.jobs_omitted ? ", " + doc.jobs_omitted + " more not read" : "") + ")";
		jobs.forEach(function (j) {
			var tr = el("tr", "job");
			var name = el("td", "mono", j.name || j.lock_path);
			if (flagged(j.paused)) {
				var why = flagText(j.paused, j, "paused");
				name.appendChild(badge("paused", "warn", why));
				if (why) name.appendChild(el("span", "muted small", " " + why));
			}
			if (j.cluster_leases !== undefined && j.cluster_leases !== j.leases)
				name.appendChild(badge("conflict", "bad", "the cluster agreed on " + str(j.cluster_leases) + " leases"));
			if (j.cluster_locks !== undefined)
				name.appendChild(badge("conflict", "bad", "the job record's locks are " + str(j.cluster_locks)));
			if (j.record_corrupt) name.appendChild(badge("record corrupt", "bad"));
			/* Written by a newer leasekeeper (docs/upgrading.md): this one does not run it. */
			if (j.format_refused) name.appendChild(badge("newer format", "bad", j.format_refused));
			if (j.state && j.state.format_refused)
				name.appendChild(badge("state: newer format", "bad", j.state.format_refused));
			if (j.state && j.state.corrupt) name.appendChild(badge("state corrupt", "bad"));
			if (j.warning) name.appendChild(badge("warning", "bad", j.warning));
			tr.appendChild(name);
			var sched = el("td", "mono", j.schedule);
			/* A chain (from the configuration): the parents it runs after, the jobs after it. */
			if (Array.isArray(j.after)) sched.appendChild(el("span", "muted small", " after " + j.after.map(str).join(", ")));
			if (Array.isArray(j.children))
				sched.appendChild(el("span", "muted small", " then " + j.children.map(function (c) {
					return str(c && c.job);
				}).join(", ")));
			tr.appendChild(sched);
			var next = el("td", null, flagged(j.paused) ? "paused" :
				j.next_tick ? since(time(j.next_tick), now) : "");
			next.title = str(j.next_tick);
			tr.appendChild(next);
			tr.appendChild(lockCell(j));
			tr.appendChild(list(j.holders, "holder", j.holders_omitted));
			tr.appendChild(list(j.waiters, "waiter", j.waiters_omitted));
			var runs = sortedRuns(j), last = el("td"), live = runningRuns(j);
			live.forEach(function (r) {
				last.appendChild(el("span", "badge o-running", "running"));
				last.appendChild(el("span", "muted running-now", " " + nodeName(r) + " pid " +
					str(r.pid) + " since " + since(time(r.start), now) + " fence " + str(r.fence) +
					(Array.isArray(r.locks) ? " (" + r.locks.map(function (k) {
						return str(k && k.path) + " " + str(k && k.mode) + " fence " + str(k && k.fence);
					}).join(", ") + ")" : "") + " "));
			});
			if (live.length) { /* the runs in progress say it all */ } else if (runs.length) {
				var r = runs[runs.length - 1], o = outcome(r);
				var chip = el("span", "badge o-" + o, OUTCOMES[o] + (manual(r) ? " (manual)" : ""));
				last.appendChild(chip);
				last.appendChild(el("span", "muted", " " + nodeName(r) + " " + since(runEnd(r), now)));
			} else last.appendChild(el("span", "muted", "none recorded"));
			tr.appendChild(last);
			body.appendChild(tr);
		});
		if (jobs.length === 0) body.appendChild(emptyRow(7, "no job"));
	}

	/* Every run of every job, each with its job's name. */
	function allRuns() {
		var out = [];
		(doc.jobs || []).forEach(function (j) {
			(j.runs || []).concat(runningRuns(j)).forEach(function (r) {
				out.push({job: str(j.name || j.lock_path), r: r});
			});
		});
		return out;
	}

	/* The chosen window, or from the oldest run shown (a minute at least, 24 hours at most). */
	function windowOf(runs, now) {
		var w = Number($("window").value), t0 = now - 60000;
		if (w > 0) return [now - w, now];
		runs.forEach(function (x) { var s = runStart(x.r); if (s !== null && s < t0) t0 = s; });
		t0 = Math.max(t0, now - 86400000);
		return [t0 - (now - t0) / 50, now];
	}

	function bar(x, win) {
		var r = x.r, o = outcome(r), s = runStart(r), e = runEnd(r);
		var b = el("div", "run o-" + o + (manual(r) ? " manual" : ""));
		var range = win[1] - win[0];
		b.style.left = Math.max(0, (s - win[0]) / range * 100) + "%";
		b.style.width = Math.max(0, (Math.min(e, win[1]) - Math.max(s, win[0])) / range * 100) + "%";
		b.title = x.job + ": " + OUTCOMES[o] + (manual(r) ? " (manual)" : "") + " on " +
			nodeName(r) + ", " + fmt(s) + (r.end ? " to " + fmt(e) : "") +
			(r.running ? " to now (" + Math.max(0, Math.round((e - s) / 1000)) + " s)" : "") +
			parentsText(r);
		b.tabIndex = 0;
		b.setAttribute("role", "button");
		b.addEventListener("click", function () { show(x, b); });
		b.addEventListener("keydown", function (ev) { if (ev.key === "Enter") show(x, b); });
		if (selected && selected.job === x.job && selected.r.znode === r.znode) b.classList.add("selected");
		return b;
	}

	/* Steps between the axis' labels (ms): the first that gives at most 8 labels is used. */
	var AXIS_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
		21600, 43200, 86400].map(function (s) { return s * 1000; });

	function pad2(n) { return (n < 10 ? "0" : "") + n; }

	/* A label of the time axis: UTC, like every time of the page; seconds when the step has them. */
	function tickText(ms, step) {
		var d = new Date(ms), t = pad2(d.getUTCHours()) + ":" + pad2(d.getUTCMinutes());
		return step % 60000 ? t + ":" + pad2(d.getUTCSeconds()) : t;
	}

	/*
	 * The time axis: the window's two ends in full, and between them labels at round times
	 * (every 1 s to 1 day, at most 8), each placed where its time is on the tracks below.
	 */
	function axisOf(win) {
		var axis = el("div", "tl-axis"), range = win[1] - win[0], step = AXIS_STEPS[AXIS_STEPS.length - 1];
		for (var i = 0; i < AXIS_STEPS.length; i++)
			if (range / AXIS_STEPS[i] <= 8) { step = AXIS_STEPS[i]; break; }
		axis.appendChild(el("span", "tl-end tl-start", fmt(win[0])));
		for (var t = Math.ceil(win[0] / step) * step; t < win[1]; t += step) {
			var at = (t - win[0]) / range * 100;
			if (at < 12 || at > 88) continue; /* the ends' own labels are there */
			var tick = el("span", "tl-tick", tickText(t, step));
			tick.style.left = at + "%";
			tick.title = fmt(t);
			tick.setAttribute("data-ms", String(t));
			axis.appendChild(tick);
		}
		axis.appendChild(el("span", "tl-end tl-stop", fmt(win[1])));
		return axis;
	}

	function timeline(box, groups, win) {
		clear(box);
		box.appendChild(axisOf(win));
		Object.keys(groups).sort().forEach(function (k) {
			var row = el("div", "tl-row"), track = el("div", "tl-track");
			var label = el("div", "tl-label", k);
			label.title = k;
			row.appendChild(label);
			groups[k].forEach(function (x) {
				var s = runStart(x.r);
				if (s === null || runEnd(x.r) < win[0] || s > win[1]) return;
				track.appendChild(bar(x, win));
			});
			row.appendChild(track);
			box.appendChild(row);
		});
		if (!Object.keys(groups).length) box.appendChild(el("div", "muted", "no run recorded"));
	}

	function renderTimelines(now) {
		var runs = allRuns(), win = windowOf(runs, now);
		var byJob = Object.create(null), byWorker = Object.create(null);
		(doc.jobs || []).forEach(function (j) { byJob[str(j.name || j.lock_path)] = []; });
		runs.forEach(function (x) {
			if (runStart(x.r) === null) return; /* deleted between the listing and the read */
			byJob[x.job].push(x);
			var n = str(x.r.node) || "?";
			if (!Object.prototype.hasOwnProperty.call(byWorker, n)) byWorker[n] = [];
			byWorker[n].push(x);
		});
		timeline($("tl-jobs"), byJob, win);
		timeline($("tl-workers"), byWorker, win);
	}

	/* A chained run's parents' runs, for a title: " after build RUN_ID". */
	function parentsText(r) {
		if (!Array.isArray(r.after) || !r.after.length) return "";
		return " after " + r.after.map(function (p) { return str(p && p.job) + " " + str(p && p.run_id); }).join(", ");
	}

	/* The run of job with this run id, when the view holds it. */
	function findRun(job, id) {
		var found = null;
		allRuns().forEach(function (x) { if (!found && x.job === job && str(x.r.run_id) === id) found = x; });
		return found;
	}

	/* A field of links between runs of a chain: each shows that run's details. */
	function runLinks(dl, name, items) {
		if (!items.length) return;
		var dd = el("dd");
		items.forEach(function (it, i) {
			var x = findRun(it.job, it.run_id);
			var a = el(x ? "a" : "span", x ? null : "muted", it.job + " " + it.run_id + (it.outcome ? " (" + it.outcome + ")" : ""));
			if (i) dd.appendChild(document.createTextNode(", "));
			if (x) {
				a.href = "#run=" + encodeURIComponent(x.job + "/" + str(x.r.znode));
				a.addEventListener("click", function (ev) { ev.preventDefault(); show(x, null); });
			}
			dd.appendChild(a);
		});
		dl.appendChild(el("dt", null, name));
		dl.appendChild(dd);
	}

	/* A run's chain: the parents' runs it answers, and the children's runs that answer it. */
	function chainLinks(dl, x) {
		var r = x.r, kids = [];
		runLinks(dl, "after", (Array.isArray(r.after) ? r.after : []).map(function (p) {
			return { job: str(p && p.job), run_id: str(p && p.run_id), outcome: str(p && p.outcome) };
		}));
		if (r.run_id) allRuns().forEach(function (y) {
			(Array.isArray(y.r.after) ? y.r.after : []).forEach(function (p) {
				if (p && p.job === x.job && p.run_id === r.run_id)
					kids.push({ job: y.job, run_id: str(y.r.run_id || y.r.znode), outcome: OUTCOMES[outcome(y.r)] });
			});
		});
		runLinks(dl, "then", kids);
	}

	function field(dl, name, value) {
		if (value === undefined || value === null || value === "") return;
		dl.appendChild(el("dt", null, name));
		dl.appendChild(el("dd", null, value));
	}

	function outputText(v) {
		if (typeof v === "string") return v;
		if (v && typeof v === "object") {
			if (typeof v.tail === "string") return v.tail;
			if (typeof v.text === "string") return v.text;
			return JSON.stringify(v, null, 2);
		}
		return "";
	}

	/*
	 * The tail of a run in progress: its output as its worker serves it (the dashboard's
	 * GET /api/runs/JOB/RUN_ID/output?from=N, the same as `leasekeeper logs --follow`),
	 * polled every second and appended as text, until the run ended and all is read.
	 */
	var tail = null, TAIL_MAX_CHARS = 262144;

	function stopTail() {
		if (tail && tail.timer) clearTimeout(tail.timer);
		tail = null;
		$("tail").hidden = true;
	}

	function tailAppend(text) {
		var out = $("tail-output");
		out.appendChild(document.createTextNode(text));
		if (out.textContent.length > TAIL_MAX_CHARS) /* the page keeps the end only */
			out.textContent = out.textContent.slice(-TAIL_MAX_CHARS / 2);
		out.scrollTop = out.scrollHeight;
	}

	function tailAnswer(t, resp, buf) {
		var at = Number(resp.headers.get("X-Output-Offset")), next = Number(resp.headers.get("X-Output-Next"));
		var outcome = resp.headers.get("X-Run-Outcome");
		if (at > t.from) tailAppend("[... " + (at - t.from) + " bytes of output not kept for followers ...]\n");
		tailAppend(t.decoder.decode(buf, {stream: true}));
		t.from = next;
		$("tail").setAttribute("data-from", String(next));
		if (resp.headers.get("X-Run-State") === "ended" && outcome) {
			$("tail-state").textContent = "ended: " + outcome;
			$("tail").setAttribute("data-state", "ended");
			return false;
		}
		$("tail-state").textContent = "running";
		return true;
	}

	function tailPoll(t) {
		t.timer = null;
		fetch("/api/runs/" + encodeURIComponent(t.job) + "/" + encodeURIComponent(t.id) + "/output?from=" + t.from,
			{cache: "no-store", credentials: "same-origin"})
			.then(function (resp) {
				if (!resp.ok) return resp.text().then(function (text) {
					var e = new Error("HTTP " + resp.status + ": " + text.split("\n")[0]);
					e.code = resp.status;
					throw e;
				});
				return resp.arrayBuffer().then(function (buf) { return tail === t && tailAnswer(t, resp, buf); });
			})
			.then(function (more) {
				if (tail === t && more) t.timer = setTimeout(function () { tailPoll(t); }, 1000);
			}, function (err) {
				if (tail !== t) return;
				$("tail-state").textContent = str(err && err.message);
				/* 404 (ended a while ago), 403 (not kept), 400: nothing more to read */
				if ([400, 403, 404].indexOf(err && err.code) < 0)
					t.timer = setTimeout(function () { tailPoll(t); }, 3000);
			});
	}

	function startTail(job, id) {
		if (tail && tail.job === job && tail.id === id) return;
		stopTail();
		tail = {job: job, id: id, from: 0, timer: null, decoder: new TextDecoder("utf-8")};
		$("tail-output").textContent = "";
		$("tail-state").textContent = "following";
		$("tail").setAttribute("data-state", "following");
		$("tail").hidden = false;
		tailPoll(tail);
	}

	/* The details of one run, its output tail when the record keeps one. */
	function show(x, b) {
		var r = x.r, dl = $("detail-fields"), o = outcome(r), s = time(r.start), e = time(r.end);
		selected = x;
		document.querySelectorAll(".run.selected").forEach(function (n) { n.classList.remove("selected"); });
		if (b) b.classList.add("selected");
		$("detail-title").textContent = x.job + " " + str(r.run_id || r.znode);
		clear(dl);
		field(dl, "job", x.job);
		field(dl, "run", r.run_id); /* its one id: the log lines' run=, LEASEKEEPER_RUN_ID */
		field(dl, "record", r.znode);
		field(dl, "outcome", OUTCOMES[o] + (manual(r) ? " (manual)" : ""));
		field(dl, "reason", r.reason);
		field(dl, "missed because", r.missed_reason); /* docs/outcomes.md */
		chainLinks(dl, x);
		field(dl, "worker", nodeName(r));
		field(dl, "tick", r.tick !== undefined ? fmt(time(r.tick)) : "");
		field(dl, "pid", r.pid);
		field(dl, "start", r.start);
		field(dl, "end", r.end);
		if (s !== null && e !== null) field(dl, "duration", ((e - s) / 1000).toFixed(3) + " s");
		field(dl, "exit status", exitStatus(r));
		field(dl, "signal", r.signal);
		field(dl, "error", r.error);
		field(dl, "fence", r.fence);
		if (Array.isArray(r.locks))
			field(dl, "locks", r.locks.map(function (k) {
				return str(k && k.path) + " (" + str(k && k.mode) + ") fence " + str(k && k.fence);
			}).join(", "));
		if (typeof r.cpu_usec === "number") field(dl, "cpu", (r.cpu_usec / 1e6).toFixed(3) + " s");
		if (typeof r.memory_peak === "number") field(dl, "peak memory", (r.memory_peak / 1048576).toFixed(1) + " MiB");
		Object.keys(r).forEach(function (k) { if (KNOWN_FIELDS.indexOf(k) < 0) field(dl, k, r[k]); });
		var out = outputText(r.output !== undefined ? r.output : r.output_tail);
		$("detail-output").textContent = out ||
			(r.running ? "(in progress: its record keeps its output once it ends; the tail below follows it)" :
				"(this run record keeps no output)");
		if (r.running && r.run_id) startTail(x.job, str(r.run_id));
		else stopTail();
		$("detail").hidden = false;
	}

	/* The run a #run=JOB/ZNODE link names, once, when it is in the view. */
	function openLinked() {
		/* a job's name has no "/"; a run in progress's znode has one ("running/ID") */
		var want = decodeURIComponent(location.hash.slice(5)), cut = want.indexOf("/");
		allRuns().forEach(function (x) {
			if (linked && x.job === want.slice(0, cut) && str(x.r.znode) === want.slice(cut + 1)) {
				linked = false;
				show(x, null);
			}
		});
	}

	function problems(now) {
		var ul = $("problems"), items = [];
		clear(ul);
		if (doc.error) items.push(doc.error);
		(doc.errors || []).forEach(function (e) { items.push(e); });
		(doc.warnings || []).forEach(function (e) { items.push(e); });
		if (doc.trimmed) items.push("the view was " + str(doc.trimmed) + " bytes: long strings are cut");
		var gen = time(doc.generated), refresh = doc.refresh_ms || 3000;
		if (gen !== null && Date.now() - gen > 3 * refresh + 5000)
			items.push("this view is from " + fmt(gen) + ": the dashboard cannot read ZooKeeper now");
		items.forEach(function (t) { ul.appendChild(el("li", null, t)); });
		ul.hidden = items.length === 0;
	}

	function render() {
		var now = time(doc.generated) || Date.now();
		$("root").textContent = str(doc.root);
		problems(now);
		renderWorkers(now);
		renderJobs(now);
		renderTimelines(now);
		if (linked) openLinked();
		$("status").textContent = "updated " + fmt(now);
		document.body.setAttribute("data-state", "ready");
	}

	function fail(text) {
		$("status").textContent = text;
		document.body.setAttribute("data-state", "error");
	}

	function poll() {
		timer = null;
		fetch("/api/cluster", {cache: "no-store", credentials: "same-origin"})
			.then(function (resp) {
				return resp.json().then(function (body) {
					if (!resp.ok) throw new Error(str(body.error) || "HTTP " + resp.status);
					return body;
				});
			})
			.then(function (body) { doc = body; render(); })
			.catch(function (err) { fail("cannot read the cluster: " + str(err && err.message)); })
			.then(function () {
				timer = setTimeout(poll, doc && doc.refresh_ms > 1000 ? doc.refresh_ms : 3000);
			});
	}

	function legend() {
		var box = $("legend");
		Object.keys(OUTCOMES).forEach(function (o) {
			box.appendChild(el("span", "o o-" + o, OUTCOMES[o]));
		});
	}

	$("window").addEventListener("change", function () { if (doc) render(); });
	$("detail-close").addEventListener("click", function () {
		$("detail").hidden = true;
		stopTail();
		selected = null;
		document.querySelectorAll(".run.selected").forEach(function (n) { n.classList.remove("selected"); });
	});
	legend();
	poll();
})();
