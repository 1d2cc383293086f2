-- Headless test of :CairnRemember and cairn.remember() against the real `cairn serve`.
--
--   nvim --headless --clean -u NONE -c "luafile editors/nvim/test/remember.lua"
--
-- Environment (set by tests/editors/test_nvim_remember.py):
--   CAIRN_TEST_PYTHON    interpreter that runs `-m cairn.server serve`
--   CAIRN_TEST_WS        an empty workspace with an AGENTS.md
--
-- Every wait is bounded (vim.wait).  Any failure prints "cairn remember: FAIL: ..."
-- on stderr, stops the server and exits 1; success prints "cairn remember: OK".
local here = debug.getinfo(1, "S").source:sub(2)
package.path = vim.fn.fnamemodify(here, ":p:h:h") .. "/?.lua;" .. package.path

local TIMEOUT = 90000

local harness = dofile(vim.fn.fnamemodify(here, ":p:h") .. "/harness.lua")
local check = harness.check
local messages, errors = harness.messages, harness.errors

local function wait_for(what, pred)
  harness.wait_for(what, pred, TIMEOUT, false)
end

local function main()
  local cairn = require("cairn")
  local ws = os.getenv("CAIRN_TEST_WS")
  cairn.setup({
    cmd = { os.getenv("CAIRN_TEST_PYTHON"), "-m", "cairn.server", "serve" },
    settings = { mode = "propose", provider = "extractive" },
  })
  check(vim.fn.exists(":CairnRemember") == 2, "user command :CairnRemember is missing")
  vim.cmd("edit " .. vim.fn.fnameescape(ws .. "/AGENTS.md"))
  local buf = vim.api.nvim_get_current_buf()
  wait_for("the cairn client to attach", function() return harness.attached(cairn, buf) end)

  -- the Lua API answers with the proposal made for the text
  local done, err, answer = false, nil, nil
  cairn.remember("Never rebase a branch someone else pushed to", "feedback", function(e, r)
    done, err, answer = true, e, r
  end)
  wait_for("cairn.remember", function() return done end)
  check(err == nil, "cairn.remember failed: %s", err and err.message or "")
  local props = answer.result.proposals
  check(#props == 1 and props[1].state == "pending", "proposals: %s", vim.inspect(props))
  -- a feedback directive becomes a working agreement of the instruction file
  check(props[1].target == "AGENTS.md", "target: %s", props[1].target)

  -- :CairnRemember over a range of lines, with a type
  local scratch = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_set_current_buf(scratch)
  vim.api.nvim_buf_set_lines(scratch, 0, -1, false, { "The CI cache is keyed on", "the lockfile hash" })
  vim.cmd("1,2CairnRemember type=project")
  wait_for(":CairnRemember's message", function()
    for _, m in ipairs(messages) do
      if m:match("^cairn: p%x+ pending: New project memory: The CI cache is keyed on") then return true end
    end
    return #errors > 0
  end)
  check(#errors == 0, "unexpected error: %s", errors[1] or "")

  -- cairn.command("cairn.remember") says what happened: the proposal, with its id (fails before:
  -- "cairn.remember done", also when the review was only queued)
  require("cairn").command("cairn.remember", { text = "Release notes are written in CHANGES.md",
    type = "project", source = "nvim" })
  wait_for("cairn.command's remember message", function()
    for _, m in ipairs(messages) do
      if m:match("^cairn: p%x+ pending: New project memory: Release notes are written in CHANGES%.md") then
        return true
      end
    end
    return #errors > 0
  end)
  check(#errors == 0, "unexpected error: %s", errors[1] or "")
  for _, m in ipairs(messages) do
    check(not m:match("remember done"), "message was %s", m)
  end
  -- a remember whose review was queued (another review held the workspace) says so, naming the request
  local queued = require("cairn.commands").command_message("cairn.remember",
    { result = { remember = "rm-1", reviewed = false, proposals = {} } })
  check(queued == "remembered; queued for review (rm-1): its proposal follows from the review running now",
    "queued message: %s", queued)

  -- bad input: the fixed code reaches the user as an error message
  vim.cmd("CairnRemember type=opinion some text")
  wait_for("the E_USAGE message", function() return #errors > 0 end)
  check(errors[1]:match("E_USAGE"), "error was %s", errors[1])
end

harness.run("remember", main)
