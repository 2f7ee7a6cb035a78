// Environment probe: a worker that answers every message with the message itself. The page times
// one awaited round trip per sample, as it times the [page] rows: no engine can answer the page
// faster than this, so it is the floor of every [page] row (recorded with every run).
self.onmessage = (e) => self.postMessage(e.data);
