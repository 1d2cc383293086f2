-- Headless smoke test of cairn.lua against the real `cairn serve`.
--
--   nvim --headless --clean -u NONE -c "luafile editors/nvim/test/smoke.lua"
--
-- Environment (set by tests/editors/test_nvim.py):
--   CAIRN_TEST_PYTHON    interpreter that runs `-m cairn.server serve`
--   CAIRN_TEST_WS        workspace with a pending proposal
--   CAIRN_TEST_FILE      the proposal's target, relative to the workspace
--   CAIRN_TEST_PROPOSAL  the proposal id to accept and then undo
--   CAIRN_TEST_OUT       directory for the file's bytes after accept / undo
--
-- Every wait is bounded (vim.wait).  Any failure prints "cairn smoke: FAIL: ..."
-- on stderr, stops the server and exits 1; success prints "cairn smoke: OK".
local here = debug.getinfo(1, "S").source:sub(2)
package.path = vim.fn.fnamemodify(here, ":p:h:h") .. "/?.lua;" .. package.path
local cairn -- loaded in main(), so that a load error fails the run too

local TIMEOUT = 90000 -- ms for one server round trip (a decision runs a worker)

local function env(name)
  local value = os.getenv(name)
  if not value or value == "" then
    error(name .. " is not set", 0)
  end
  return value
end

local harness = dofile(vim.fn.fnamemodify(here, ":p:h") .. "/harness.lua")
local check = harness.check
-- vim.notify messages (the user commands report through it); an error fails the run
local messages, errors = harness.messages, harness.errors

local function wait_for(what, pred, timeout)
  harness.wait_for(what, pred, timeout or TIMEOUT, true)
end

-- Start `start(callback)` and wait until the callback ran; return its (err, result).
local function await(what, start)
  local done, err, result = false, nil, nil
  check(start(function(e, r)
    done, err, result = true, e, r
  end) ~= false, "could not send %s", what)
  wait_for(what, function()
    return done
  end)
  check(err == nil, "%s failed: %s", what, err and (err.message or vim.inspect(err)) or "")
  return result
end

local function read_bytes(path)
  local f = check(io.open(path, "rb"), "cannot read %s", path)
  local data = f:read("*a")
  f:close()
  return data
end

local function write_bytes(path, data)
  local f = check(io.open(path, "wb"), "cannot write %s", path)
  f:write(data)
  f:close()
end

local function buffer_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n"
end

local stop_all = harness.stop_all

local function notified(pattern)
  for _, msg in ipairs(messages) do
    if msg:match(pattern) then
      return true
    end
  end
  return false
end

local function history_state(id)
  local rows = await("cairn/cockpit history", function(cb)
    return cairn.request("cairn/cockpit", { view = "history" }, cb)
  end)
  for _, row in ipairs(rows or {}) do
    if row.id == id then
      return row.state
    end
  end
end

local function main()
  cairn = require("cairn")
  local ws = env("CAIRN_TEST_WS")
  local target = ws .. "/" .. env("CAIRN_TEST_FILE")
  local id = env("CAIRN_TEST_PROPOSAL")
  local out = env("CAIRN_TEST_OUT")
  local original = read_bytes(target)

  cairn.setup({
    cmd = { env("CAIRN_TEST_PYTHON"), "-m", "cairn.server", "serve" },
    settings = { mode = "propose", provider = "extractive" },
  })
  for _, name in ipairs({ "CairnStatus", "CairnDrain", "CairnAccept", "CairnReject", "CairnUndo", "CairnShow",
    "CairnProposals" }) do
    check(vim.fn.exists(":" .. name) == 2, "user command :%s is missing", name)
  end

  -- opening the instruction file starts the server and attaches the buffer
  vim.cmd("edit " .. vim.fn.fnameescape(target))
  local buf = vim.api.nvim_get_current_buf()
  wait_for("the cairn client to attach", function() return harness.attached(cairn, buf) end)
  local client = cairn.client(buf)
  check(client.config.root_dir == ws, "root_dir is %s, expected %s", tostring(client.config.root_dir), ws)

  -- a second memory file in the same workspace reuses the same server
  vim.cmd("edit " .. vim.fn.fnameescape(ws .. "/.agents/memory/MEMORY.md"))
  local memory_buf = vim.api.nvim_get_current_buf()
  wait_for("MEMORY.md to attach", function()
    return client.attached_buffers[memory_buf]
  end)
  check(#harness.cairn_clients() == 1, "%d cairn clients for one workspace, expected 1", #harness.cairn_clients())
  vim.cmd("buffer " .. buf)

  -- status counts come from a snapshot the server refreshes in the background:
  -- ask again until it shows the pending proposals
  local deadline, status = vim.loop.now() + TIMEOUT, nil
  while true do
    status = await("cairn/status", function(cb)
      return cairn.status(cb)
    end)
    if type(status.proposals) == "number" and status.proposals > 0 then
      break
    end
    check(vim.loop.now() < deadline, "cairn/status proposals = %s, expected > 0", tostring(status.proposals))
    vim.wait(100)
  end

  -- the pending proposal shows as an Information diagnostic in its target
  wait_for("the proposal's diagnostic", function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.source == "cairn" and d.code == id and d.severity == vim.diagnostic.severity.INFO then
        return true
      end
    end
    return false
  end)

  local proposal = await("cairn/proposal", function(cb)
    return cairn.request("cairn/proposal", { id = id }, cb)
  end)
  check(proposal.id == id and proposal.state == "pending", "cairn/proposal answered %s", vim.inspect(proposal))

  -- :CairnStatus shows the counts, proposals and mode first; the statusline counts too
  vim.cmd("CairnStatus")
  wait_for(":CairnStatus's message", function()
    return notified("^cairn: [1-9]%d* proposals, propose mode | pending %d+")
  end)
  check(cairn.statusline():match("^cairn:[1-9]") ~= nil, "statusline is %s", cairn.statusline())

  -- ids complete; :CairnProposals fills the quickfix list
  local completions = vim.fn.getcompletion("CairnAccept ", "cmdline")
  check(vim.tbl_contains(completions, id), "completion of :CairnAccept lacks %s: %s", id, vim.inspect(completions))
  local items = await(":CairnProposals", function(cb)
    return cairn.proposals(function(list)
      cb(nil, list)
    end)
  end)
  local qf = vim.fn.getqflist()
  check(#qf == #items and #qf == status.proposals, "quickfix has %d entries, expected %d", #qf, status.proposals)
  local found = false
  for _, item in ipairs(qf) do
    found = found or (item.text:find(id, 1, true) == 1 and vim.api.nvim_buf_get_name(item.bufnr) == target)
  end
  check(found, "no quickfix entry for %s at %s", id, target)

  -- :CairnShow opens a named diff buffer
  vim.cmd("CairnShow " .. id)
  wait_for("the diff buffer", function()
    return vim.fn.bufnr("cairn://proposal/" .. id) ~= -1
  end)
  check(vim.bo[vim.fn.bufnr("cairn://proposal/" .. id)].filetype == "diff", "the proposal buffer is not a diff")
  vim.cmd("close")
  vim.cmd("buffer " .. buf)

  -- :CairnAccept: the file changes on disk and the unmodified buffer follows it
  vim.cmd("CairnAccept " .. id)
  wait_for(":CairnAccept to finish", function()
    return notified("^cairn: accepted: " .. vim.pesc(id) .. " applied")
  end)
  local after = read_bytes(target)
  write_bytes(out .. "/after-accept", after)
  check(after ~= original, "cairn.accept left %s unchanged", target)
  wait_for("the buffer to reload after accept", function()
    return buffer_text(buf) == after
  end)
  check(history_state(id) == "applied", "history state of %s is not applied", id)

  -- undo: the exact original bytes come back
  await("cairn.undo", function(cb)
    return cairn.command("cairn.undo", { id = id }, cb)
  end)
  local restored = read_bytes(target)
  write_bytes(out .. "/after-undo", restored)
  check(restored == original, "cairn.undo did not restore the original bytes of %s", target)
  check(history_state(id) == "undone", "history state of %s is not undone", id)

  -- a completed turn becomes an open capture (the journal counts it once captured)
  local function open_captures()
    local st = await("cairn/status", function(cb)
      return cairn.status(cb)
    end)
    return st.journal and st.journal.open or 0
  end
  local open_before = open_captures()
  check(cairn.turn_completed({
    sessionId = "nvim-smoke",
    turnId = "t1",
    user = "From now on run the linter before every commit.",
    assistant = "Understood: linter before every commit.",
    completedAt = "2025-06-12T10:00:00Z",
  }) ~= false, "cairn/turnCompleted was not sent")
  deadline = vim.loop.now() + TIMEOUT
  while open_captures() ~= open_before + 1 do
    check(vim.loop.now() < deadline, "the turn sent with cairn/turnCompleted was never captured")
    vim.wait(100)
  end

  -- :CairnDrain echoes its progress and its end
  vim.cmd("CairnDrain")
  wait_for("the drain's end message", function()
    return notified("^cairn: drain done: published %d+")
  end)
  check(notified("^cairn: draining backlog"), "the drain's begin was not shown")

  -- a crashed server: :CairnStatus restarts it for the open memory file
  local crashed = cairn.client(buf)
  local pid = vim.fn.trim(vim.fn.system({ "pgrep", "-P", tostring(vim.fn.getpid()), "-f", "cairn.server" }))
  check(pid:match("^%d+$") ~= nil, "cannot find the server process: %s", pid)
  vim.loop.kill(tonumber(pid), 9)
  wait_for("the crashed client to stop", function() return harness.is_stopped(crashed) end)
  for i = #messages, 1, -1 do messages[i] = nil end -- cleared in place: the harness appends to this table
  vim.cmd("CairnStatus")
  wait_for(":CairnStatus after the crash", function()
    return notified("^cairn: %d+ proposals, propose mode")
  end)
  check(not notified("no cairn server is running"), "a memory file is open, yet: no cairn server is running")
  check(cairn.client(buf) ~= nil and cairn.client(buf).id ~= crashed.id, "no new client after the crash")

  -- a clean shutdown ends the server process
  check(stop_all(false), "the cairn server did not exit after shutdown")
end

harness.run("smoke", main)
