import { type Client, Code, defineService, GrpcError } from "../../../src/framework/index.js";
import { InventoryService } from "../../gen/shop/inventory/v1/inventory_pb.js";
import { OrdersService } from "../../gen/shop/orders/v1/orders_pb.js";

/**
 * The orders service: placing an order checks the stock with the inventory service, then reserves it.
 * Run by the service, it makes its inventory client from INVENTORY_ADDRESS; a test hands it a fake one.
 */
export function ordersService(inventory?: Client<typeof InventoryService>) {
  return defineService(OrdersService, {
    handlers: {
      async placeOrder(request) {
        const stock = await inventory!.getStock({ sku: request.sku });
        if (stock.quantity < request.quantity) {
          throw new GrpcError(Code.FAILED_PRECONDITION, `only ${stock.quantity} of ${request.sku} in stock`);
        }
        const { reservationId } = await inventory!.reserve({ sku: request.sku, quantity: request.quantity });
        return { reservationId };
      },
    },
    preStart(app) {
      if (inventory) return;
      const address = process.env.INVENTORY_ADDRESS;
      if (!address) throw new Error("INVENTORY_ADDRESS is not set (say dns:///inventory:9090)");
      inventory = app.createClient(InventoryService, address, {
        // GetStock only reads: when an answer takes over 50 ms, ask another replica too.
        methods: { getStock: { hedging: { maxAttempts: 2, delayMs: 50 } } },
      });
    },
    postStop() {
      inventory?.close();
    },
  });
}
