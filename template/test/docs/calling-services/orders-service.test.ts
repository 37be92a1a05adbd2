import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout } from "node:timers/promises";
import { Code, GrpcError } from "../../../src/framework/index.js";
import { createFakeClient } from "../../../src/framework/testing/fake-client.js";
import { startTestServer } from "../../../src/framework/testing/harness.js";
import { statusOf } from "../../../src/framework/testing/status.js";
import { InventoryService } from "../../gen/shop/inventory/v1/inventory_pb.js";
import { OrdersService } from "../../gen/shop/orders/v1/orders_pb.js";
import { ordersService } from "./orders-service.js";

test("an order in stock is reserved", async (t) => {
  const reserved: string[] = [];
  const inventory = createFakeClient(InventoryService, {
    getStock: () => ({ quantity: 5 }),
    reserve(request) {
      reserved.push(`${request.quantity} x ${request.sku}`);
      return { reservationId: "r-1" };
    },
  });
  const server = await startTestServer([ordersService(inventory)]);
  t.after(() => server.close());
  const orders = server.client(OrdersService);

  assert.equal((await orders.placeOrder({ sku: "tea", quantity: 2 })).reservationId, "r-1");
  assert.deepEqual(reserved, ["2 x tea"]);
});

test("an order beyond the stock fails FAILED_PRECONDITION; an inventory outage, UNAVAILABLE", async (t) => {
  let down = false;
  const inventory = createFakeClient(InventoryService, {
    async getStock() {
      await setTimeout(5); // as slow as a network hop
      if (down) throw new GrpcError(Code.UNAVAILABLE, "inventory is down");
      return { quantity: 1 };
    },
  });
  const server = await startTestServer([ordersService(inventory)]);
  t.after(() => server.close());
  const orders = server.client(OrdersService);

  const tooMany = await statusOf(orders.placeOrder({ sku: "tea", quantity: 2 }));
  assert.equal(tooMany.code, Code.FAILED_PRECONDITION);
  assert.equal(tooMany.details, "only 1 of tea in stock");
  down = true;
  assert.equal((await statusOf(orders.placeOrder({ sku: "tea", quantity: 1 }))).code, Code.UNAVAILABLE);
});
