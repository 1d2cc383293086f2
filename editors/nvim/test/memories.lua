-- Headless test of the cockpit's Memories view and :CairnVerify against the real `cairn serve`.
--
--   nvim --headless --clean -u NONE -c "luafile editors/nvim/test/memories.lua"
--
-- Environment (set by tests/editors/test_nvim_memories.py):
--   CAIRN_TEST_PYTHON    interpreter that runs `-m cairn.server serve`
--   CAIRN_TEST_WS        a workspace with two accepted topics ("Tests": `make check`, whose target the
--                        Makefile lost; "Package manager": pnpm) and an AGENTS.md naming `make lint`
--
-- ? lists the Memories view's keys, u says it is not for this view (no undo picker opens);
-- V verifies (the stale topic shows why, the instruction file's stale line is counted), r on a topic
-- proposes its retirement after asking, c confirms one (a stale one is refused), e visits its file; the
-- open AGENTS.md gets a warning on its stale line.  Every wait is bounded.  Success prints
-- "cairn memories: OK"; a failure "cairn memories: FAIL: ..." on stderr and exit status 1.
local here = debug.getinfo(1, "S").source:sub(2)
package.path = vim.fn.fnamemodify(here, ":p:h:h") .. "/?.lua;" .. package.path

local TIMEOUT = 90000

local harness = dofile(vim.fn.fnamemodify(here, ":p:h") .. "/harness.lua")
local check = harness.check
local messages, errors = harness.messages, harness.errors

local function wait_for(what, pred)
  harness.wait_for(what, pred, TIMEOUT, false)
end

local function said(pattern)
  for _, m in ipairs(messages) do
    if m:match(pattern) then
      return m
    end
  end
end

local function line_of(buf, pattern)
  for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if l:match(pattern) then
      return i, l
    end
  end
end

local function press(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), "x", false)
end

local function main()
  local cairn = require("cairn")
  local ws = os.getenv("CAIRN_TEST_WS")
  cairn.setup({
    cmd = { os.getenv("CAIRN_TEST_PYTHON"), "-m", "cairn.server", "serve" },
    settings = { mode = "propose", provider = "extractive" },
  })
  check(vim.fn.exists(":CairnVerify") == 2, "user command :CairnVerify is missing")
  local cockpit = require("cairn.cockpit")
  local buf
  cockpit.open(ws, "memories", function(b) buf = b end)
  wait_for("the Memories view", function() return buf ~= nil and line_of(buf, "run%-the%-tests") ~= nil end)
  check(vim.api.nvim_buf_get_lines(buf, 2, 3, false)[1]:match("c confirm  r retire  V verify"),
    "the Memories view's keys: %s", vim.api.nvim_buf_get_lines(buf, 2, 3, false)[1])
  -- the header says the embedded engine writes the digests, once, with where to get better recall
  local got_status = false
  require("cairn.status").status(ws, function()
    cockpit.refresh(buf, function() got_status = true end)
  end)
  wait_for("the status in the header", function() return got_status end)
  check(vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1]:match("embedded engine %(cairn setup for better recall%)"),
    "the header: %s", vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1])

  -- ? lists this view's keys (fails before: the Pending view's, a accept, u undo, ...)
  local before = #messages
  press("?")
  local keys = messages[before + 1] or ""
  check(keys:match("^cairn: <CR> visit, e visit %(update by hand%), c confirm, r retire, V verify")
    and not keys:match("accept") and not keys:match("undo"), "? in Memories: %s", keys)
  -- u is not for Memories: it says so and opens no picker (fails before: the global undo picker)
  local select, picked = vim.ui.select, nil
  vim.ui.select = function(_, opts)
    picked = opts.prompt
  end
  press("u")
  check((messages[before + 2] or ""):match("^cairn: u undoes a decision: H lists them"), "u in Memories: %s",
    tostring(messages[before + 2]))

  -- V: verify now; the message counts what was found, the view shows the stale topic and why
  press("V")
  wait_for("the verification's message", function() return said("^cairn: verified 2 topic") ~= nil end)
  check(picked == nil, "u in Memories opened a picker: %s", tostring(picked))
  vim.ui.select = select
  local m = said("^cairn: verified 2 topic")
  check(m:match("1 stale, 1 proposal%(s%) %(in the cockpit's Pending view%)"), "message: %s", m)
  check(m:match("; 1 stale line%(s%) in instruction files"), "message: %s", m)
  wait_for("the stale mark", function()
    local _, l = line_of(buf, "run%-the%-tests")
    return l ~= nil and l:match(" stale ") ~= nil and l:match("%(stale: .*check") ~= nil
  end)

  -- c on the stale topic is refused: it must be updated or retired
  local row = line_of(buf, "run%-the%-tests")
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  press("c")
  wait_for("the refusal", function() return #errors > 0 end)
  check(errors[1]:match("E_TOPIC_STALE"), "error: %s", errors[1])
  table.remove(errors, 1)

  -- c on the other topic confirms it; r asks, then proposes its retirement
  row = line_of(buf, "use%-pnpm")
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  press("c")
  wait_for("the confirmation", function() return said("use%-pnpm.*: confirmed %d") ~= nil end)
  local asked
  vim.ui.select = function(items, opts, on_choice)
    asked = opts.prompt
    on_choice(items[1])
  end
  row = line_of(buf, "use%-pnpm")
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  press("r")
  wait_for("the retirement", function() return said("use%-pnpm.*: retirement p%x+ proposed") ~= nil end)
  check(asked and asked:match("^cairn: retire "), "asked: %s", tostring(asked))
  check(#errors == 0, "unexpected error: %s", errors[1] or "")

  -- e visits the topic's file
  row = line_of(buf, "use%-pnpm")
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  press("e")
  check(vim.api.nvim_buf_get_name(0):match("/%.agents/memory/use%-pnpm[^/]*%.md$"), "visited %s",
    vim.api.nvim_buf_get_name(0))

  -- the instruction file's stale line is a warning on that line when the file is open
  vim.cmd("edit " .. vim.fn.fnameescape(ws .. "/AGENTS.md"))
  local agents = vim.api.nvim_get_current_buf()
  wait_for("the cairn client to attach", function() return harness.attached(cairn, agents) end)
  wait_for("the stale line's warning", function()
    for _, d in ipairs(vim.diagnostic.get(agents)) do
      if d.code == "stale-line" then
        return true
      end
    end
  end)
  for _, d in ipairs(vim.diagnostic.get(agents)) do
    if d.code == "stale-line" then
      check(d.lnum == 2 and d.severity == vim.diagnostic.severity.WARN and d.message:match("lint"),
        "the warning: %s", vim.inspect(d))
    end
  end
end

harness.run("memories", main)
