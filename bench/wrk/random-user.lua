-- GET /users/{random id} over the seeded ids.
local max_id = tonumber(os.getenv("SEEDED") or "10000")
math.randomseed(os.time())
request = function()
  return wrk.format("GET", "/users/" .. math.random(1, max_id))
end
