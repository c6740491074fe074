-- POST /users, then DELETE of the user it made, in turns on each connection: deletions need
-- rows that exist, and the seeded ones would run out. Each pair is two requests.
local counter = 0
local run = tostring(os.time()) .. tostring(math.random(100000, 999999))
local made = {}
request = function()
  local id = table.remove(made)
  if id then
    return wrk.format("DELETE", "/users/" .. id)
  end
  counter = counter + 1
  local body = string.format('{"name":"Bench User %d","email":"pair-%s-%d@example.com"}', counter, run, counter)
  return wrk.format("POST", "/users", { ["Content-Type"] = "application/json" }, body)
end
response = function(status, headers, body)
  if status == 201 then
    local id = body:match('"id":(%d+)')
    if id then table.insert(made, id) end
  end
end
