// pgqueue dashboard. Data is always written with textContent (never innerHTML), so a payload
// holding markup shows as text.
(function () {
  'use strict';

  var REFRESH_MS = 5000;
  var session = { readOnly: true, csrf: {} };
  var selectedQueue = null;
  var queueOffset = 0;
  var PAGE = 20;
  var selectedDeadLetters = new Set();

  function $(id) { return document.getElementById(id); }

  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      if (key === 'text') { node.textContent = attrs[key]; }
      else if (key === 'className') { node.className = attrs[key]; }
      else if (key === 'onclick') { node.addEventListener('click', attrs[key]); }
      else { node.setAttribute(key, attrs[key]); }
    });
    for (var i = 2; i < arguments.length; i++) { if (arguments[i]) { node.appendChild(arguments[i]); } }
    return node;
  }

  function td(text, className) { return el('td', { text: text == null ? '' : String(text), className: className || '' }); }

  function pre(text) { return el('td', {}, el('pre', { text: text == null ? '' : text })); }

  function status(text, error) {
    var node = $('status');
    node.textContent = text;
    node.className = error ? 'error' : '';
  }

  function api(path, options) {
    options = options || {};
    var headers = { 'Accept': 'application/json' };
    if (options.body !== undefined) { headers['Content-Type'] = 'application/json'; }
    if (options.method && options.method !== 'GET') {
      // Writes need this header and a JSON body: neither can be sent by a form on another site.
      headers['X-PgQueue-Request'] = 'dashboard';
      if (session.csrf && session.csrf.headerName) { headers[session.csrf.headerName] = session.csrf.token; }
    }
    return fetch('api/' + path, {
      method: options.method || 'GET',
      headers: headers,
      credentials: 'same-origin',
      body: options.body === undefined ? undefined : JSON.stringify(options.body)
    }).then(function (response) {
      return response.text().then(function (text) {
        var data = text ? JSON.parse(text) : {};
        if (!response.ok) { throw new Error(response.status + ': ' + (data.error || text)); }
        return data;
      });
    });
  }

  function write(path, body, done) {
    return api(path, { method: 'POST', body: body || {} }).then(function (result) {
      status(done(result), false);
      refresh();
    }).catch(function (e) { status(e.message, true); });
  }

  function q(params) {
    return Object.keys(params).map(function (k) {
      return encodeURIComponent(k) + '=' + encodeURIComponent(params[k]);
    }).join('&');
  }

  function age(seconds) {
    if (!seconds) { return '–'; }
    if (seconds < 120) { return seconds.toFixed(1) + ' s'; }
    if (seconds < 7200) { return (seconds / 60).toFixed(1) + ' min'; }
    return (seconds / 3600).toFixed(1) + ' h';
  }

  function time(iso) { return iso ? new Date(iso).toLocaleString() : ''; }

  function button(label, onclick) { return el('button', { type: 'button', className: 'write', text: label, onclick: onclick }); }

  function loadQueues() {
    return api('queues').then(function (data) {
      var body = $('queues-table').tBodies[0];
      body.replaceChildren();
      var origin = $('origin');
      var known = new Set(Array.prototype.map.call(origin.options, function (o) { return o.value; }));
      data.queues.forEach(function (s) {
        var link = el('a', { text: s.queue, 'data-queue': s.queue, onclick: function () { openQueue(s.queue); } });
        body.appendChild(el('tr', { 'data-queue': s.queue }, el('td', {}, link), td(s.ready, 'num'),
          td(s.scheduled, 'num'), td(s.inFlight, 'num'), td(s.deadLettered, 'num'), td(age(s.oldestReadyAgeSeconds), 'num'),
          td(s.rateLimit ? s.rateLimit + ' (' + s.waitingForRateLimit + ' waiting)' : '', 'num'),
          td(s.concurrencyKey ? s.concurrencyKey + (s.waitingForKeyLimit != null ? ' (' + [
            s.maxInFlightPerKey != null ? s.maxInFlightPerKey + ' in flight' : null,
            s.rateLimitPerKey ? s.rateLimitPerKey : null].filter(Boolean).join(', ') + ' per key, '
            + s.waitingForKeyLimit + ' waiting)' : '') : '')));
        if (!known.has(s.queue) && !/\.dlq$/.test(s.queue)) { origin.appendChild(el('option', { value: s.queue, text: s.queue })); }
      });
      drawChart(data.minutes);
    });
  }

  function drawChart(minutes) {
    var svg = $('chart');
    var ns = 'http://www.w3.org/2000/svg';
    svg.replaceChildren();
    var max = 1;
    minutes.forEach(function (m) { max = Math.max(max, m.processed + m.retried + m.deadLettered); });
    var now = minutes.length ? Date.parse(minutes[minutes.length - 1].start) : 0;
    minutes.forEach(function (m) {
      var slot = 60 - Math.round((now - Date.parse(m.start)) / 60000);
      if (slot < 0) { return; }
      var y = 120;
      [['processed', m.processed], ['retried', m.retried], ['dead', m.deadLettered]].forEach(function (part) {
        var h = part[1] / max * 110;
        if (h <= 0) { return; }
        y -= h;
        var rect = document.createElementNS(ns, 'rect');
        rect.setAttribute('x', String(slot * 10));
        rect.setAttribute('y', String(y));
        rect.setAttribute('width', '8');
        rect.setAttribute('height', String(h));
        rect.setAttribute('class', part[0]);
        var title = document.createElementNS(ns, 'title');
        title.textContent = time(m.start) + ': ' + m.processed + ' processed, ' + m.retried + ' retried, ' + m.deadLettered + ' dead-lettered';
        rect.appendChild(title);
        svg.appendChild(rect);
      });
    });
    var last = minutes[minutes.length - 1];
    $('rates-now').textContent = last ? 'this minute so far: ' + last.processed + ' processed, ' + last.retried
      + ' retried, ' + last.deadLettered + ' dead-lettered; peak ' + max + ' a minute' : '';
  }

  function openQueue(name) {
    selectedQueue = name;
    queueOffset = 0;
    $('queue').hidden = false;
    loadQueue();
  }

  function loadQueue() {
    if (!selectedQueue) { return Promise.resolve(); }
    var order = $('order').value;
    return api('queue?' + q({ name: selectedQueue, order: order, offset: queueOffset, limit: PAGE })).then(function (data) {
      $('queue-name').textContent = data.queue;
      var policy = $('policy');
      policy.replaceChildren();
      var p = data.policy;
      var rows = p ? [['max attempts', p.maxAttempts],
        ['back-off', p.backoffInitialMs + ' ms × ' + p.backoffMultiplier + ', at most ' + p.backoffMaxMs + ' ms'],
        ['dead-letter queue', p.deadLetterQueue],
        ['deduplication window', p.deduplicationWindowMs == null ? 'none' : p.deduplicationWindowMs + ' ms'],
        ['retention', p.retentionMs == null ? 'none' : p.retentionMs + ' ms'],
        ['rate limit', p.rateLimit || 'none'],
        ['concurrency key', p.concurrencyKey || 'none'],
        ['max in flight per key', p.maxInFlightPerKey == null ? 'no limit' : p.maxInFlightPerKey],
        ['rate limit per key', data.rateLimitPerKey || 'none'],
        ['waiting for the limits per key', data.waitingForKeyLimit == null ? 'none' : data.waitingForKeyLimit],
        ['declared', time(p.updatedAt)]]
        : [['policy', 'not declared (defaults apply)']];
      rows.push(['messages', data.total]);
      rows.forEach(function (r) { policy.appendChild(el('dt', { text: r[0] })); policy.appendChild(el('dd', { text: String(r[1]) })); });
      $('page').textContent = data.total ? (data.offset + 1) + '–' + Math.min(data.total, data.offset + data.messages.length) + ' of ' + data.total : 'empty';
      $('prev').disabled = data.offset === 0;
      $('next').disabled = data.offset + data.messages.length >= data.total;
      var body = $('messages-table').tBodies[0];
      body.replaceChildren();
      data.messages.forEach(function (m) {
        var cancel = m.state === 'parked' ? null : button('cancel', function () {
          write('queue/cancel?' + q({ name: m.queue, id: m.id }), undefined, function (r) { return 'message ' + m.id + ': ' + r.result; });
        });
        body.appendChild(el('tr', { 'data-id': String(m.id) }, td(m.id, 'num'), td(m.state + (m.state === 'scheduled' ? ' until ' + time(m.visibleAt) : '')),
          td(m.attempts + ' / ' + m.maxAttempts, 'num'), td(time(m.createdAt)), pre(m.payload), pre(m.headers), pre(m.lastError),
          el('td', {}, cancel)));
      });
      $('archive').hidden = !(p && p.retentionMs != null);
      return $('archive').hidden ? null : loadArchive();
    });
  }

  function loadArchive() {
    var params = { queue: selectedQueue, limit: PAGE };
    if ($('archive-id').value) { params.id = $('archive-id').value; }
    if ($('archive-header').value) { params.header = $('archive-header').value; params.value = $('archive-value').value; }
    return api('archive?' + q(params)).then(function (data) {
      var body = $('archive-table').tBodies[0];
      body.replaceChildren();
      data.archive.forEach(function (m) {
        var resend = button('send again', function () {
          write('archive/resend?' + q({ queue: m.queue, id: m.id }), undefined, function (r) { return 'archived message ' + m.id + ' sent again as ' + r.sent; });
        });
        body.appendChild(el('tr', { 'data-id': String(m.id) }, td(m.id, 'num'), td(m.outcome.toLowerCase().replace('_', '-')),
          td(m.attempts, 'num'), td(time(m.completedAt)), pre(m.payload), pre(JSON.stringify(m.headers)), pre(m.lastError),
          el('td', {}, resend)));
      });
    });
  }

  function loadDeadLetters() {
    return api('dead-letters?' + q({ origin: $('origin').value })).then(function (data) {
      var body = $('dead-letters-table').tBodies[0];
      body.replaceChildren();
      var present = new Set();
      data.deadLetters.forEach(function (m) {
        present.add(m.id);
        var box = el('input', { type: 'checkbox', className: 'write', 'data-id': String(m.id) });
        box.checked = selectedDeadLetters.has(m.id);
        box.addEventListener('change', function () {
          if (box.checked) { selectedDeadLetters.add(m.id); } else { selectedDeadLetters.delete(m.id); }
        });
        var actions = el('td', {},
          button('redrive', function () { redrive([m.id]); }),
          button('delete', function () {
            if (window.confirm('Delete dead letter ' + m.id + '?')) {
              write('dead-letters/delete?' + q({ queue: m.queue, id: m.id }), undefined, function (r) { return 'dead letter ' + m.id + ': ' + r.result; });
            }
          }));
        body.appendChild(el('tr', { 'data-id': String(m.id) }, el('td', {}, box), td(m.id, 'num'), td(m.origin), td(m.queue),
          td(m.state + ', ' + m.attempts + ' attempts'), pre(m.payload), pre(m.lastError), actions));
      });
      selectedDeadLetters.forEach(function (id) { if (!present.has(id)) { selectedDeadLetters.delete(id); } });
      $('redrive-all').disabled = !$('origin').value;
    });
  }

  function redrive(ids) {
    return write('dead-letters/redrive', { ids: ids }, function (r) { return 'redrove ' + r.moved + ' of ' + ids.length + ' dead letters'; });
  }

  function loadListeners() {
    return api('listeners').then(function (data) {
      var body = $('listeners-table').tBodies[0];
      body.replaceChildren();
      data.listeners.forEach(function (l) {
        var state = !l.running ? 'stopped' : l.paused ? 'paused' : 'running';
        var act = function (action) {
          return button(action, function () {
            write('listeners/' + action + '?' + q({ id: l.id }), undefined, function () { return 'listener ' + l.id + ': ' + action; });
          });
        };
        body.appendChild(el('tr', { 'data-id': l.id }, td(l.id), td(l.queues.join(', ')), td(l.concurrency, 'num'),
          td(state, 'state'), td(l.connected ? 'yes' : 'no'),
          el('td', {}, l.running ? act(l.paused ? 'resume' : 'pause') : null, act(l.running ? 'stop' : 'start'))));
      });
    });
  }

  function loadSchedules() {
    return api('schedules').then(function (data) {
      var body = $('schedules-table').tBodies[0];
      body.replaceChildren();
      data.schedules.forEach(function (s) {
        var action = s.paused ? 'resume' : 'pause';
        body.appendChild(el('tr', { 'data-name': s.name }, td(s.name), td(s.cron), td(s.zone), td(s.target),
          td(s.missed), td(s.paused ? 'paused' : 'active', 'state'), td(time(s.nextFireAt)), td(time(s.lastFiredAt)),
          td(s.fired, 'num'),
          el('td', {}, button(action, function () {
            write('schedules/' + action + '?' + q({ name: s.name }), undefined, function () { return 'schedule ' + s.name + ': ' + action; });
          }))));
      });
    });
  }

  function refresh() {
    return Promise.all([loadQueues(), loadQueue(), loadDeadLetters(), loadListeners(), loadSchedules()])
      .then(function () {
        status('updated ' + new Date().toLocaleTimeString(), false);
        document.body.setAttribute('data-loaded', String(Date.now()));
      })
      .catch(function (e) { status(e.message, true); });
  }

  document.addEventListener('DOMContentLoaded', function () {
    $('order').addEventListener('change', function () { queueOffset = 0; loadQueue(); });
    $('prev').addEventListener('click', function () { queueOffset = Math.max(0, queueOffset - PAGE); loadQueue(); });
    $('next').addEventListener('click', function () { queueOffset += PAGE; loadQueue(); });
    $('origin').addEventListener('change', function () { selectedDeadLetters.clear(); loadDeadLetters(); });
    $('archive-search').addEventListener('click', function () { loadArchive().catch(function (e) { status(e.message, true); }); });
    $('redrive-selected').addEventListener('click', function () {
      if (selectedDeadLetters.size) { redrive(Array.from(selectedDeadLetters)); } else { status('select dead letters first', true); }
    });
    $('redrive-all').addEventListener('click', function () {
      var origin = $('origin').value;
      if (origin && window.confirm('Redrive every dead letter of ' + origin + '?')) {
        write('dead-letters/redrive', { origin: origin }, function (r) { return 'redrove ' + r.moved + ' dead letters of ' + origin; });
      }
    });
    api('session').then(function (s) {
      session = s;
      document.body.classList.toggle('read-only', s.readOnly);
      $('mode').textContent = s.readOnly ? 'read-only' : 'read-write';
      $('user').textContent = s.user;
      return refresh();
    }).catch(function (e) { status(e.message, true); });
    window.setInterval(refresh, REFRESH_MS);
  });
}());
