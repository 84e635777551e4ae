Feature: Checkout
  An order goes from the product list through the terms to a confirmed order.

  @group @group.speed=100
  Scenario: Order a product
    Given I open the shop
    And I accept the cookie banner
    When I add the "Green Tea" to the cart
    And I check out and accept the terms
    And I fill the order form:
      | field | value           |
      | Email | ann@example.com |
      | Name  | Ann Example     |
    And I place the order
    Then the order status shows "order confirmed" [tries=2]
